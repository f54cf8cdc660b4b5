"""Claude through Google Vertex AI, with the SDK's own ``AsyncAnthropicVertex`` client.

Same Messages API, tools and tool loop as :mod:`aianalysis.analysis.llm.anthropic_provider` (this only
builds another client). Credentials come from application default credentials (GKE workload
identity, ``GOOGLE_APPLICATION_CREDENTIALS``), or a ready access token from a token broker
(``AIANALYSIS_VERTEX_ACCESS_TOKEN``, kept out of every message like an API key).
"""

from __future__ import annotations

import anthropic
import httpx2
from anthropic.lib.vertex import AsyncAnthropicVertex

from aianalysis import settings
from aianalysis.analysis.llm import anthropic_provider, retry_after, sdk_loop

PROVIDER_NAME = "vertex"


class VertexProvider(anthropic_provider.AnthropicProvider):
    name = PROVIDER_NAME
    caches_conversation = False

    def _credential(self, config: settings.Settings) -> str:
        token = config.llm.vertex_access_token
        return token.get_secret_value() if token else ""

    def _make_client(
        self, config: settings.Settings, http_client: httpx2.AsyncClient | None
    ) -> AsyncAnthropicVertex:
        assert config.llm.vertex_region, "settings require it for provider vertex"
        return retry_after.Vertex(
            region=config.llm.vertex_region,
            project_id=config.llm.vertex_project_id or anthropic.not_given,
            access_token=self._secret or None,
            base_url=config.llm.vertex_base_url or _default_base_url(config.llm.vertex_region),
            **sdk_loop.client_options(config, http_client),
        )

    async def _probe(self) -> None:
        """Counting the tokens of a one-word message is free and names the model."""
        await self._client.messages.count_tokens(
            model=self.model, messages=[{"role": "user", "content": "ping"}]
        )


def _default_base_url(region: str) -> str:
    """The SDK's endpoint for ``region`` (computed here so it never falls back to its env variable)."""
    if region == "global":
        return "https://aiplatform.googleapis.com/v1"
    if region in ("us", "eu"):
        return f"https://aiplatform.{region}.rep.googleapis.com/v1"
    return f"https://{region}-aiplatform.googleapis.com/v1"
