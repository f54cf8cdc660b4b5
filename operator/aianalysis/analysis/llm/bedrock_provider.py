"""Claude through AWS Bedrock, with the SDK's own ``AsyncAnthropicBedrock`` client.

Same Messages API, tools and tool loop as :mod:`aianalysis.analysis.llm.anthropic_provider` (this only
builds another client). Requests are SigV4-signed with credentials from the AWS default chain:
IRSA's web identity token, the environment, an instance profile; nothing from our settings, so
nothing secret to log. The model is a Bedrock model or inference-profile id.
"""

from __future__ import annotations

import httpx2
from anthropic.lib.bedrock import AsyncAnthropicBedrock

from aianalysis import settings
from aianalysis.analysis.llm import anthropic_provider, retry_after, sdk_loop

PROVIDER_NAME = "bedrock"


class BedrockProvider(anthropic_provider.AnthropicProvider):
    name = PROVIDER_NAME
    caches_conversation = False

    def _credential(self, config: settings.Settings) -> str:
        return ""  # signed by the AWS chain: there is no secret of ours to redact

    def _make_client(
        self, config: settings.Settings, http_client: httpx2.AsyncClient | None
    ) -> AsyncAnthropicBedrock:
        assert config.llm.aws_region, "settings require it for provider bedrock"
        return retry_after.Bedrock(
            aws_region=config.llm.aws_region,
            base_url=config.llm.bedrock_base_url
            or f"https://bedrock-runtime.{config.llm.aws_region}.amazonaws.com",
            **sdk_loop.client_options(config, http_client),
        )

    async def _probe(self) -> None:
        """Bedrock's runtime has no model lookup (that is another service and another IAM action):
        a one-token reply is the cheapest call ``bedrock:InvokeModel`` allows."""
        await self._client.messages.create(
            model=self.model, max_tokens=1, messages=[{"role": "user", "content": "ping"}]
        )
