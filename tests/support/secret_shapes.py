"""A corpus of secret shapes as they reach the investigation tools: every shape issue 31 names and
the common ones of gitleaks' rule set, each with synthetic values (seeded, so the corpus is the same
on every run; random enough to carry the entropy of a real credential). No real credential is here,
and none is written in this file: values are generated, so a secret scanner of this repository sees
templates, not tokens.

``SHAPES``: (id, text, secrets) — the text as it would appear in a log line, an env value, a
ConfigMap value or an annotation, and every substring that must not survive redaction.
``OBJECTS``: (id, Kubernetes object, secrets) — shapes that need the structure (env lists, Argo CD
parameter lists, nested values under a secret-named key).
"""

from __future__ import annotations

import base64
import json
import random
import string
from typing import Any

_RNG = random.Random(31)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
BASE32 = string.ascii_uppercase + "234567"  # AWS access key ids
LOWER_DIGITS = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def password(n: int = 16) -> str:
    return rand(ALNUM, n - 2) + _RNG.choice("!#%") + _RNG.choice(string.digits)


def b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def jwt() -> str:
    head = b64url({"alg": "RS256", "typ": "JWT", "kid": rand(LOWER_DIGITS, 12)})
    body = b64url(
        {
            "sub": "system:serviceaccount:shop:api",
            "iss": "https://kubernetes.default.svc",
            "exp": 1_800_000_000,
        }
    )
    return f"{head}.{body}.{rand(URLSAFE, 86)}"


def pem(kind: str = "RSA PRIVATE KEY") -> str:
    lines = [rand(B64, 64) for _ in range(12)] + [rand(B64, 40) + "=="]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"


def _shapes() -> list[tuple[str, str, list[str]]]:
    shapes: list[tuple[str, str, list[str]]] = []

    def add(shape_id: str, template: str, *secrets: str) -> None:
        shapes.append((shape_id, template.format(*secrets), list(secrets)))

    # ---- named in the issue
    add(
        "yaml-parent-key",
        "spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/shop\n"
        "    username: shop\n    password: {}\n",
        password(),
    )
    add("yaml-parent-key-direct", "database:\n  password: {}\n  pool: 10\n", password())
    add(
        "helm-values-nested",
        "postgresql:\n  auth:\n    postgresPassword: {}\n    replicationPassword: {}\n",
        password(),
        password(),
    )
    add("env-mysql-pwd", "MYSQL_PWD={}", password())
    add("env-db-pass", "export DB_PASS={}", password())
    add("env-redis-auth", "REDIS_AUTH={}", password(24))
    add("env-gh-creds", "GH_CREDS=ghp_{}", rand(ALNUM, 36))
    add("dsn-postgres", "DATABASE_URL=postgres://shop:{}@db.shop.svc:5432/shop?sslmode=require", password())
    add("dsn-mysql-log", "connecting to mysql://root:{}@mysql:3306/orders", password())
    add("dsn-mongodb-srv", "mongodb+srv://app:{}@cluster0.example.net/prod?retryWrites=true", password())
    add("dsn-redis-no-user", "redis://:{}@redis-master:6379/0", password())
    add("dsn-amqp", "amqp://guest:{}@rabbitmq:5672/", password())
    add(
        "slack-webhook",
        "posting to https://hooks.slack.com/services/T{}/B{}/{}",
        rand(UPPER_DIGITS, 10),
        rand(UPPER_DIGITS, 10),
        rand(ALNUM, 24),
    )
    add(
        "slack-bot-token",
        "SLACK_TOKEN=xoxb-{}-{}-{}",
        rand(string.digits, 12),
        rand(string.digits, 13),
        rand(ALNUM, 24),
    )
    add("pem-rsa", "tls.key: |\n{}\n", pem())
    add("pem-pkcs8-log", "loaded key material {}", pem("PRIVATE KEY"))
    add("pem-ec", "{}", pem("EC PRIVATE KEY"))
    add("pem-openssh", "{}", pem("OPENSSH PRIVATE KEY"))
    add("jwt-raw", "request rejected, token {} expired", jwt())
    add("jwt-bearer", "Authorization: Bearer {}", jwt())
    # ---- GitHub tokens, every prefix
    add("github-pat", "git clone https://x:ghp_{}@github.com/org/repo", rand(ALNUM, 36))
    add("github-oauth", "token gho_{}", rand(ALNUM, 36))
    add("github-user-to-server", "ghu_{}", rand(ALNUM, 36))
    add("github-server-to-server", "installation token ghs_{}", rand(ALNUM, 36))
    add("github-refresh", "refresh ghr_{}", rand(ALNUM, 36))
    add("github-fine-grained", "github_pat_{}_{}", rand(ALNUM, 22), rand(ALNUM, 59))
    add("gitlab-pat", "CI_TOKEN glpat-{}", rand(URLSAFE, 20))
    # ---- clouds
    add("aws-access-key", "AWS_ACCESS_KEY_ID=AKIA{}", rand(BASE32, 16))
    add("aws-secret-key", "AWS_SECRET_ACCESS_KEY={}", rand(B64, 40))
    add("aws-key-in-log", "using credentials ASIA{} from the environment", rand(BASE32, 16))
    add("gcp-api-key", "maps key AIza{}", rand(URLSAFE, 35))
    sa = {
        "type": "service_account",
        "project_id": "shop-prod",
        "private_key_id": rand(HEX, 40),
        "private_key": pem("PRIVATE KEY") + "\n",
        "client_email": "deployer@shop-prod.iam.gserviceaccount.com",
        "client_id": rand(string.digits, 21),
    }
    shapes.append(
        (
            "gcp-service-account-json",
            json.dumps(sa, indent=2),
            # The key itself, every line of it; private_key_id names the key (as an AWS key id
            # or a kid does) and is kept, like the client id.
            sa["private_key"].splitlines()[1:-1],
        )
    )
    add(
        "azure-storage-connection-string",
        "DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey={}==;EndpointSuffix=core.windows.net",
        rand(B64, 86),
    )
    add(
        "azure-servicebus-connection-string",
        "Endpoint=sb://shop.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={}=",
        rand(B64, 43),
    )
    add("azure-client-secret", "AZURE_CLIENT_SECRET={}", rand(ALNUM + "~._-", 40))
    # ---- SaaS
    add("stripe-live", "stripe.api_key = 'sk_live_{}'", rand(ALNUM, 24))
    add("stripe-restricted", "rk_live_{}", rand(ALNUM, 24))
    add("npm-token", "//registry.npmjs.org/:_authToken=npm_{}", rand(ALNUM, 36))
    add("sendgrid", "SENDGRID_API_KEY=SG.{}.{}", rand(URLSAFE, 22), rand(URLSAFE, 43))
    add("twilio", "twilio key SK{}", rand(HEX, 32))
    add("openai", "OPENAI_API_KEY=sk-proj-{}", rand(URLSAFE, 74) + "T3BlbkFJ" + rand(URLSAFE, 74))
    add("anthropic", "x-api-key: sk-ant-api03-{}AA", rand(URLSAFE, 93))
    add("datadog", "DD_API_KEY={}", rand(HEX, 32))
    add("pagerduty-routing-key", "routing_key: {}", rand(HEX, 32))
    add(
        "docker-config-auth",
        '{{"auths":{{"registry.example":{{"auth":"{}"}}}}}}',
        base64.b64encode(f"ci:{password()}".encode()).decode(),
    )
    # ---- generic shapes
    add("basic-auth-url", "fetching https://admin:{}@nexus.example/repository/", password())
    add(
        "basic-auth-header",
        "Authorization: Basic {}",
        base64.b64encode(f"admin:{password()}".encode()).decode(),
    )
    add("json-password", '{{"user": "app", "password": "{}"}}', password())
    add("query-string", "GET /login?user=bob&password={}&next=/", password())
    add("cli-flag", "--db-password={}", password())
    add("cli-flag-space", "--api-key {}", rand(ALNUM, 32))
    add("kv-quoted", 'secret = "{}"', password())
    add("jdbc-properties", "jdbc:sqlserver://db:1433;databaseName=shop;user=sa;password={};", password())
    add("htpasswd-ish", "PASSPHRASE={}", password(20))
    add("private-token-header", "PRIVATE-TOKEN: {}", rand(URLSAFE, 20))
    add("k8s-sa-token-env", "KUBE_TOKEN={}", jwt())
    return shapes


def _objects() -> list[tuple[str, dict[str, Any], list[str]]]:
    objects: list[tuple[str, dict[str, Any], list[str]]] = []
    pwd, app_pwd, token, value = password(), password(), rand(ALNUM, 32), password()
    objects.append(
        (
            "argocd-helm-parameters",
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Application",
                "metadata": {"name": "shop", "namespace": "argocd"},
                "spec": {
                    "source": {
                        "helm": {
                            "parameters": [
                                {"name": "image.tag", "value": "1.4.2"},
                                {"name": "postgresql.auth.password", "value": pwd},
                                {"name": "DB_PASS", "value": app_pwd},
                            ],
                            "values": f"redis:\n  auth:\n    enabled: true\n    password: {value}\n",
                        }
                    }
                },
            },
            [pwd, app_pwd, value],
        )
    )
    objects.append(
        (
            "argo-workflow-parameters",
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Workflow",
                "metadata": {"name": "etl", "namespace": "shop"},
                "spec": {"arguments": {"parameters": [{"name": "SNOWFLAKE_PASSWORD", "value": token}]}},
            },
            [token],
        )
    )
    nested_user, nested_pwd = rand(LOWER_DIGITS, 10), password()
    objects.append(
        (
            "custom-nested-credentials",
            {
                "apiVersion": "example.io/v1",
                "kind": "Database",
                "metadata": {"name": "orders", "namespace": "shop"},
                "spec": {"credentials": {"username": nested_user, "value": nested_pwd}},
            },
            [nested_pwd],
        )
    )
    envs = {name: password() for name in ("MYSQL_PWD", "DB_PASS", "REDIS_AUTH", "SMTP_PASS", "API_CREDS")}
    objects.append(
        (
            "pod-env",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "api-0", "namespace": "shop"},
                "spec": {
                    "containers": [
                        {
                            "name": "api",
                            "image": "shop/api:1",
                            "env": [{"name": k, "value": v} for k, v in envs.items()],
                        }
                    ]
                },
            },
            list(envs.values()),
        )
    )
    app_yml = password()
    objects.append(
        (
            "configmap-spring",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "api-config", "namespace": "shop"},
                "data": {
                    "application.yml": "server:\n  port: 8080\nspring:\n  datasource:\n    url: jdbc:mysql://db/shop\n"
                    f"    password: {app_yml}\n",
                },
            },
            [app_yml],
        )
    )
    return objects


SHAPES = _shapes()
OBJECTS = _objects()
