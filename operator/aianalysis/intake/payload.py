"""Alertmanager's webhook payload (version 4), as Alertmanager sends it. Incoming data: fields we do
not use are ignored, the ones we use are checked."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

VERSION = "4"


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class Alert(_Wire):
    status: Literal["firing", "resolved"]
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: str | None = None
    ends_at: str | None = None
    generator_url: str | None = Field(default=None, alias="generatorURL")
    fingerprint: str | None = None

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "")


class WebhookPayload(_Wire):
    version: Literal["4"]
    group_key: str | None = None
    truncated_alerts: int = 0
    status: Literal["firing", "resolved"] | None = None
    receiver: str | None = None
    group_labels: dict[str, str] = Field(default_factory=dict)
    common_labels: dict[str, str] = Field(default_factory=dict)
    common_annotations: dict[str, str] = Field(default_factory=dict)
    external_url: str | None = Field(default=None, alias="externalURL")
    alerts: Annotated[list[Alert], Field(max_length=10_000)]
