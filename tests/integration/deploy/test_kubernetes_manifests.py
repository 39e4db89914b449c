"""deploy/kubernetes: the manifests pass the Kubernetes API schemas, probe the real health
routes on the ports the settings open, and name only variables the settings read."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from outbox.entrypoints.bootstrap.seal_keys import SEAL_KEYS_FILE, load_keyring
from outbox.entrypoints.settings.reader import SettingsError
from tests.integration.deploy.artifacts import (
    DEPLOY,
    ROOT,
    Process,
    outboxctl_command,
    unread_variables,
)

MANIFESTS = DEPLOY / "kubernetes"
# The oldest Kubernetes release the examples claim, and the newest the validator knows.
KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")
# Variables that carry a credential: only ever from a Secret.
SECRET_VARIABLES = (
    "OUTBOX_DATABASE_URL",
    "OUTBOX_WORKER_DATABASE_URL",
    "OUTBOX_ADMIN_DATABASE_URL",
    "OUTBOX_CONSUMERS_DATABASE_URL",
    "OUTBOX_SEAL_KEYS",
    "OUTBOX_BREVO_API_KEY",
    "OUTBOX_WASENDER_API_KEY",
    "OUTBOX_SMTP_PASSWORD",
)

Resource = dict[str, Any]


def _documents(path: Path) -> list[Resource]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def _resources() -> list[Resource]:
    kustomization = _documents(MANIFESTS / "kustomization.yaml")[0]
    return [doc for name in kustomization["resources"] for doc in _documents(MANIFESTS / name)]


RESOURCES = _resources()


def _one(kind: str, name: str) -> Resource:
    (found,) = [r for r in RESOURCES if r["kind"] == kind and r["metadata"]["name"] == name]
    return found


def _pod_spec(workload: Resource) -> Resource:
    spec: Resource = workload["spec"]["template"]["spec"]
    return spec


def _container(workload: Resource) -> Resource:
    (container,) = _pod_spec(workload)["containers"]
    return container


def _workloads() -> Iterator[Resource]:
    yield from (r for r in RESOURCES if r["kind"] in {"Deployment", "Job"})


def _secret_value(name: str, key: str) -> str:
    value: str = _one("Secret", name)["stringData"][key]
    return value


def _process(workload: Resource) -> Process:
    """The process a workload's container starts, with the environment the kubelet gives it."""
    container = _container(workload)
    environ: dict[str, str] = {}
    for source in container.get("envFrom", []):
        environ |= _one("ConfigMap", source["configMapRef"]["name"])["data"]
    for variable in container.get("env", []):
        if "value" in variable:
            environ[variable["name"]] = variable["value"]
        else:
            ref = variable["valueFrom"]["secretKeyRef"]
            environ[variable["name"]] = _secret_value(ref["name"], ref["key"])
    return Process(
        name=workload["metadata"]["name"],
        command=outboxctl_command(container["args"]),
        environ=environ,
    )


def _port(container: Resource, name: str) -> int:
    (port,) = [p["containerPort"] for p in container["ports"] if p["name"] == name]
    return int(port)


def test_the_kustomization_lists_every_manifest() -> None:
    listed = _documents(MANIFESTS / "kustomization.yaml")[0]["resources"]
    assert sorted(p.name for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml") == (
        sorted(listed)
    )


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_passes_the_kubernetes_schema(version: str) -> None:
    """Strict: an unknown or misspelt field fails, as ``kubectl apply --validate=strict`` would."""
    for resource in RESOURCES:
        kubernetes_validate.validate(resource, version, strict=True)


def test_the_schema_check_catches_a_misspelt_field() -> None:
    broken = yaml.safe_load(yaml.safe_dump(_one("Deployment", "outbox-api")))
    container = _container(broken)
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_examples_hold_the_api_worker_migration_and_their_secrets() -> None:
    assert {
        ("Deployment", "outbox-api"),
        ("Deployment", "outbox-admin"),
        ("Deployment", "outbox-worker"),
        ("Job", "outbox-migrate"),
        ("Secret", "outbox-database"),
        ("Secret", "outbox-seal-keys"),
        ("Secret", "outbox-providers"),
        ("ConfigMap", "outbox-config"),
        ("Service", "outbox-api"),
        ("Service", "outbox-admin"),
        ("Service", "outbox-worker-metrics"),
    } <= {(r["kind"], r["metadata"]["name"]) for r in RESOURCES}


def test_containers_run_real_outboxctl_commands_of_this_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
    commands = {}
    for workload in _workloads():
        container = _container(workload)
        assert "command" not in container, "the image's ENTRYPOINT is outboxctl"
        assert f"outbox:{version}" == container["image"]
        commands[workload["metadata"]["name"]] = outboxctl_command(container["args"])
    assert {
        "outbox-api": "serve",
        "outbox-admin": "serve",
        "outbox-worker": "worker",
        "outbox-migrate": "db migrate",
    } == commands
    assert ["serve", "--only", "public"] == _container(_one("Deployment", "outbox-api"))["args"]
    assert ["serve", "--only", "admin"] == _container(_one("Deployment", "outbox-admin"))["args"]


def test_each_workload_starts_with_valid_production_settings() -> None:
    for workload in _workloads():
        assert "production" == _process(workload).settings().environment.value


def test_every_variable_named_is_one_the_settings_read() -> None:
    """Each container's variables, and the shared ConfigMap's, are read by a process using them."""
    processes = [_process(workload) for workload in _workloads()]
    for process, workload in zip(processes, _workloads(), strict=True):
        named = {variable["name"] for variable in _container(workload).get("env", [])}
        assert set() == unread_variables(named, [process]), process.name
    shared = set(_one("ConfigMap", "outbox-config")["data"])
    assert set() == unread_variables(shared, processes)


def test_the_api_probes_health_and_readiness_on_the_port_it_listens_on() -> None:
    api = _one("Deployment", "outbox-api")
    container = _container(api)
    settings = _process(api).settings()
    assert settings.http.port == _port(container, "http")
    assert "0.0.0.0" == settings.http.host  # noqa: S104 - the kubelet and the Service reach it
    assert {"path": "/healthz", "port": "http"} == container["livenessProbe"]["httpGet"]
    assert {"path": "/readyz", "port": "http"} == container["readinessProbe"]["httpGet"]


def test_the_admin_listener_has_its_own_login_and_probes_its_own_port() -> None:
    admin = _one("Deployment", "outbox-admin")
    container = _container(admin)
    process = _process(admin)
    settings = process.settings()
    assert settings.http.admin_port == _port(container, "admin")
    assert "0.0.0.0" == settings.http.admin_host  # noqa: S104 - Prometheus scrapes the pod
    assert {"path": "/healthz", "port": "admin"} == container["livenessProbe"]["httpGet"]
    assert {"path": "/readyz", "port": "admin"} == container["readinessProbe"]["httpGet"]
    assert "OUTBOX_DATABASE_URL" not in process.environ  # never the public API's login
    assert settings.database.admin_url == _secret_value("outbox-database", "admin-url")


def test_the_worker_probes_its_metrics_listener() -> None:
    worker = _one("Deployment", "outbox-worker")
    container = _container(worker)
    settings = _process(worker).settings()
    assert settings.worker.metrics_port == _port(container, "metrics")
    assert {"path": "/healthz", "port": "metrics"} == container["livenessProbe"]["httpGet"]
    assert {"path": "/readyz", "port": "metrics"} == container["readinessProbe"]["httpGet"]


def test_the_worker_deployment_runs_every_lane_with_a_login_for_each_job() -> None:
    process = _process(_one("Deployment", "outbox-worker"))
    settings = process.settings()
    assert ("security", "events", "consumers") == settings.worker.lanes
    assert "OUTBOX_DATABASE_URL" not in process.environ  # never the API's login
    assert settings.database.consumers_url == _secret_value("outbox-database", "consumers-url")


def test_the_worker_pod_outlives_its_shutdown_grace() -> None:
    """The kubelet must not SIGKILL a worker still finishing its sends after SIGTERM."""
    worker = _one("Deployment", "outbox-worker")
    grace = _process(worker).settings().worker.shutdown_grace.total_seconds()
    assert _pod_spec(worker)["terminationGracePeriodSeconds"] > grace


def test_services_reach_named_container_ports_and_prometheus_scrapes_metrics() -> None:
    for service in (r for r in RESOURCES if r["kind"] == "Service"):
        component = service["spec"]["selector"]["app.kubernetes.io/component"]
        (workload,) = [
            w
            for w in _workloads()
            if w["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
            == component
        ]
        container = _container(workload)
        for port in service["spec"]["ports"]:
            _port(container, port["targetPort"])  # exactly one container port of that name
        annotations: Mapping[str, str] = service["metadata"].get("annotations", {})
        if annotations.get("prometheus.io/scrape") == "true":
            assert "/metrics" == annotations["prometheus.io/path"]
            assert {int(annotations["prometheus.io/port"])} == {
                _port(container, p["targetPort"]) for p in service["spec"]["ports"]
            }
    public = _one("Service", "outbox-api")
    assert ["http"] == [p["targetPort"] for p in public["spec"]["ports"]]


def test_credentials_come_only_from_secrets() -> None:
    assert set() == set(SECRET_VARIABLES) & set(_one("ConfigMap", "outbox-config")["data"])
    for workload in _workloads():
        for variable in _container(workload).get("env", []):
            if variable["name"] in SECRET_VARIABLES:
                assert "secretKeyRef" in variable.get("valueFrom", {}), variable["name"]


def test_seal_keys_are_a_mounted_secret_file_and_the_placeholder_is_refused(
    tmp_path: Path,
) -> None:
    """The keys reach each process that opens envelopes as a read-only file from the Secret;
    the example's placeholder stops the process, naming the variable, until replaced."""
    for name in ("outbox-api", "outbox-admin", "outbox-worker"):
        workload = _one("Deployment", name)
        container = _container(workload)
        path = Path(_process(workload).environ[SEAL_KEYS_FILE])
        (mount,) = [m for m in container["volumeMounts"] if path.parent == Path(m["mountPath"])]
        assert mount["readOnly"] is True
        (volume,) = [v for v in _pod_spec(workload)["volumes"] if v["name"] == mount["name"]]
        assert "outbox-seal-keys" == volume["secret"]["secretName"]
        assert path.name in _one("Secret", "outbox-seal-keys")["stringData"]
    placeholder = tmp_path / "seal-keys"
    placeholder.write_text(_secret_value("outbox-seal-keys", "seal-keys"), encoding="utf-8")
    process = _process(_one("Deployment", "outbox-worker"))
    settings = Process(
        name="placeholder",
        command="worker",
        environ={**process.environ, SEAL_KEYS_FILE: str(placeholder)},
    ).settings()
    with pytest.raises(SettingsError, match=SEAL_KEYS_FILE):
        load_keyring(settings)


def test_pods_run_unprivileged_with_a_read_only_root() -> None:
    for workload in _workloads():
        pod = _pod_spec(workload)
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["automountServiceAccountToken"] is False
        container = _container(workload)["securityContext"]
        assert container["allowPrivilegeEscalation"] is False
        assert container["readOnlyRootFilesystem"] is True
        assert ["ALL"] == container["capabilities"]["drop"]
