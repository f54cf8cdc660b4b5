"""The bearer tokens of the Alertmanager intake and of ``aianalysis mcp --transport http`` never
cross the network in the clear (issue 31, finding 7): both serve TLS from the certificate and key
files their settings name (the chart mounts them from a Secret), and both refuse to start with a
token over plain HTTP unless that is explicitly allowed (``*_ALLOW_PLAIN_HTTP``; the MCP server
on a loopback address too). Real servers, real TLS clients (httpx and Python's ssl), a CA and a
server certificate made for the test with ``cryptography``."""

from __future__ import annotations

import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from aianalysis import errors, settings
from aianalysis.intake import server
from aianalysis.kube import client as kube_client
from aianalysis.kube import config as kube_config
from aianalysis.kube import rest as kube_rest
from tests.integration.test_mcp_server import ACCEPT, INITIALIZE, catalog_file, clean_env, http_server
from tests.support import programs, tls
from tests.unit.test_intake_server import body

__all__ = ["catalog_file"]  # the fixture, shared
TOKEN = "tls-test-token"


def trusting(files: tls.ServerFiles) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(files.ca))


async def test_the_intake_serves_tls_with_the_files_its_settings_name(tmp_path: Path) -> None:
    files = tls.server_files(tmp_path)
    config = settings.from_env(
        {
            "AIANALYSIS_PROVIDER": "offline",
            "AIANALYSIS_INTAKE_PORT": "8443",
            "AIANALYSIS_INTAKE_TOKEN": TOKEN,
            "AIANALYSIS_INTAKE_TLS_CERT_FILE": str(files.cert),
            "AIANALYSIS_INTAKE_TLS_KEY_FILE": str(files.key),
        }
    )
    api = kube_rest.ApiClient(  # never reached: no alert here needs the cluster
        kube_config.Connection(server="http://127.0.0.1:9"), pool_size=1, timeouts=kube_client.timeouts()
    )
    intake = server.Intake.create(config, api, on_cancelled=lambda _: None)
    await intake.start(0, host="127.0.0.1")
    try:
        url = f"https://127.0.0.1:{intake.port}{server.PATH}"
        async with httpx.AsyncClient(verify=trusting(files), timeout=10) as client:
            wrong = await client.post(url, json=body(), headers={"Authorization": "Bearer nope"})
            right = await client.post(url, json=body(), headers={"Authorization": f"Bearer {TOKEN}"})
        assert (wrong.status_code, right.status_code) == (401, 200), right.text
        async with httpx.AsyncClient(timeout=10) as plain:  # the token in the clear: no answer
            with pytest.raises(httpx.HTTPError):
                await plain.post(
                    f"http://127.0.0.1:{intake.port}{server.PATH}",
                    json=body(),
                    headers={"Authorization": f"Bearer {TOKEN}"},
                )
        async with httpx.AsyncClient(timeout=10) as untrusting:  # the system's CAs do not know it
            with pytest.raises(httpx.ConnectError):
                await untrusting.post(url, json=body())
    finally:
        await intake.stop()


@pytest.mark.parametrize(
    ("env", "refusal"),
    [
        ({}, "AIANALYSIS_INTAKE_TLS_CERT_FILE"),
        ({"AIANALYSIS_INTAKE_TLS_CERT_FILE": "/tls/tls.crt"}, "AIANALYSIS_INTAKE_TLS_KEY_FILE"),
    ],
)
def test_the_intake_refuses_its_token_over_plain_http_unless_allowed(
    env: dict[str, str], refusal: str
) -> None:
    on = {
        "AIANALYSIS_PROVIDER": "offline",
        "AIANALYSIS_INTAKE_PORT": "8081",
        "AIANALYSIS_INTAKE_TOKEN": TOKEN,
    }
    with pytest.raises(errors.ConfigError, match=refusal):
        settings.from_env({**on, **env})
    allowed = settings.from_env({**on, "AIANALYSIS_INTAKE_ALLOW_PLAIN_HTTP": "true"})
    assert allowed.intake.allow_plain_http


def test_the_mcp_server_serves_tls_with_the_files_its_settings_name(
    tmp_path: Path, catalog_file: Path
) -> None:
    files = tls.server_files(tmp_path)
    env = {
        "AIANALYSIS_MCP_TOKEN": TOKEN,
        "AIANALYSIS_MCP_TLS_CERT_FILE": str(files.cert),
        "AIANALYSIS_MCP_TLS_KEY_FILE": str(files.key),
    }
    with http_server("--catalog", str(catalog_file), env=env, scheme="https", verify=trusting(files)) as url:
        assert url.startswith("https://")
        answered = httpx.post(
            url,
            json=INITIALIZE,
            headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}"},
            timeout=10,
            verify=trusting(files),
        )
        assert answered.status_code == 200, answered.text
        with pytest.raises(httpx.HTTPError):
            httpx.post(url.replace("https://", "http://"), json=INITIALIZE, headers=ACCEPT, timeout=10)


def test_the_mcp_server_refuses_its_token_over_plain_http_beyond_loopback(catalog_file: Path) -> None:
    argv = [sys.executable, "-m", "aianalysis", "mcp", "--transport", "http", "--host", "0.0.0.0",
            "--port", str(programs.free_port()), "--catalog", str(catalog_file)]  # fmt: skip
    refused = subprocess.run(
        argv, env={**clean_env(), "AIANALYSIS_MCP_TOKEN": TOKEN}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 1 and "AIANALYSIS_MCP_TLS_CERT_FILE" in refused.stderr, refused.stderr
