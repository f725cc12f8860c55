"""The live lab protocol against the running service (issue 52): its OpenAPI document and its
routes agree, and each bad input (a wrong or missing token, an unknown experiment, a duplicate
or late post, an outcome before its forecast, a forecast after its outcome, clock skew, a lab
that disconnects mid-post, a `live serve` killed and started again) is one HTTP error with a
JSON body, recorded in the run's chain, nothing lost, `store verify` passing."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.campaign.conftest import TOKEN, cli, free_port

from labreplay.compile.spec import EnvironmentSpec
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.live.board import live_board
from labreplay.suites.campaign.live.emulate import EmulatedLab
from labreplay.suites.campaign.live.lab import LiveEnv, LiveLab
from labreplay.suites.campaign.live.record import RECORD_FIELDS, RECORD_VERSION, live_record
from labreplay.suites.campaign.live.service import LabService, protocol, send_post

UNIFORM = {"p_valid": 0.5, "categories": {"completely_reacted": 0.25, "transformed": 0.25,
                                          "partially_reacted": 0.25, "unreacted": 0.25}}  # fmt: skip


def _http(method: str, url: str, token: str | None = TOKEN, body: Any = None) -> tuple[int, Any]:
    """One request: status and JSON answer (0: nothing is serving)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return int(refused.code), json.loads(refused.read())
    except (OSError, http.client.HTTPException):  # not serving (yet, or any more)
        return 0, {}


def _is_error(answer: Any) -> bool:
    return answer.get("accepted") is False and isinstance(answer.get("error"), str)


def test_the_document_and_the_running_service_agree(pg_specs: list[EnvironmentSpec]) -> None:
    spec = pg_specs[1]
    doc = protocol()
    assert doc["openapi"].startswith("3.") and doc["info"]["version"]
    quoted = urllib.parse.quote(spec.spec_id, safe="")
    with LabService(TOKEN) as service:
        service.labs[spec.spec_id] = LiveLab(spec, None, wait_s=0.01)
        assert _http("GET", f"{service.url}/openapi.json", token=None) == (200, doc)
        for path, operations in doc["paths"].items():
            url = service.url + path.replace("{spec_id}", quoted)
            for method, operation in operations.items():
                if method == "parameters":
                    continue
                documented = set(operation["responses"])
                body = {"post": "outcome", "experiment_id": "nope"} if method == "post" else None
                status, answer = _http(method.upper(), url, body=body)
                assert str(status) in documented, (method, path, status)
                if operation.get("security", doc["security"]):  # a wrong token: 401, documented
                    status, answer = _http(method.upper(), url, token="wrong", body=body)
                    assert (status, "401" in documented, _is_error(answer)) == (401, True, True)
                    assert _http(method.upper(), url, token=None, body=body)[0] == 401
        # every route the document leaves out answers 404 with the same JSON error body
        undocumented = [("GET", f"/v1/campaigns/{quoted}/posts"), ("DELETE", "/v1/campaigns"),
                        ("POST", f"/v1/campaigns/{quoted}/awaiting"), ("GET", "/v2/campaigns"),
                        ("PUT", f"/v1/campaigns/{quoted}/posts"), ("GET", "/")]  # fmt: skip
        for method, path in undocumented:
            assert path not in doc["paths"] or method.lower() not in doc["paths"][path]
            status, answer = _http(method, service.url + path, body=b"{}")
            assert status == 404 and _is_error(answer), (method, path)
        status, answer = _http("GET", f"{service.url}/v1/campaigns/nope/awaiting")
        assert status == 404 and "no campaign 'nope'" in answer["error"]
        assert _http("GET", f"{service.url}/v1/campaigns") == (200, {"campaigns": [spec.spec_id]})


class _Lab(threading.Thread):
    """A lab polling `awaiting` and posting each awaited experiment's recorded posts (again
    whenever it is awaited again: after a restart, what was recorded is refused as a
    duplicate); `first(lab, eid)` runs once, before the first experiment's posts."""

    def __init__(self, spec: EnvironmentSpec, base: str, first: Any = None) -> None:
        super().__init__(daemon=True)
        self.record, self.base, self.first = EmulatedLab(spec, print, 0, False, 0, 0), base, first
        self.stop, self.hold = threading.Event(), threading.Event()  # hold: it posts nothing
        self.hold_after: int | None = None  # hold once this many outcomes were taken
        self.answers: list[tuple[Any, int, Any]] = []  # (post, status, answer) of each post

    def post(self, post: Any, token: str | None = TOKEN) -> tuple[int, Any]:
        status, answer = _http("POST", f"{self.base}/posts", token=token, body=post)
        self.answers.append((post, status, answer))
        return status, answer

    def run(self) -> None:
        while not self.stop.is_set():
            status, body = _http("GET", f"{self.base}/awaiting")
            for eid in body.get("awaiting", []) if status == 200 and not self.hold.is_set() else []:
                if self.first is not None:
                    self.first(self, eid)
                    self.first = None
                for post in self.record.posts(eid):
                    if self.hold.is_set():
                        break
                    self.post(post)
                    taken = sum(p["post"] == "outcome" for p in self.accepted())
                    if self.hold_after is not None and taken >= self.hold_after:
                        self.hold.set()
            time.sleep(0.01)

    def accepted(self) -> list[Any]:
        return [post for post, status, _ in self.answers if status == 200]


def _cut_short(port: int, path: str) -> tuple[int, Any]:
    """A lab that disconnects mid-post: it declares 200 bytes, sends 12, and hangs up."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(f"POST {path} HTTP/1.1\r\nHost: lab\r\nAuthorization: Bearer {TOKEN}\r\n"
                     "Content-Length: 200\r\n\r\n{\"post\": \"ou".encode())  # fmt: skip
        conn.shutdown(socket.SHUT_WR)
        reply = b"".join(iter(lambda: conn.recv(65536), b""))
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _bad_inputs(port: int, path: str, others: list[str]) -> Any:
    """The bad-input list, around the first awaited experiment: (status, error words) each."""
    expected: list[tuple[int, str]] = []

    def first(lab: _Lab, eid: str) -> None:
        now = datetime.now(UTC)
        item = {"post": "evidence", "experiment_id": eid, "kind": "xrd_scan",
                "item": {"item_id": "skewed"}}  # fmt: skip
        bad = [
            ({"post": "outcome", "experiment_id": eid, "outcome": {"valid": True}}, "wrong"),
            ({"post": "outcome", "experiment_id": eid, "outcome": {"valid": True}}, None),
            (b"{not json", TOKEN),
            ({"post": "outcome", "experiment_id": "PG_nope", "outcome": {"valid": True}}, TOKEN),
            ({"post": "outcome", "experiment_id": others[0], "outcome": {"valid": True}}, TOKEN),
            ({**item, "at": (now + timedelta(hours=1)).isoformat()}, TOKEN),
            ({**item, "at": "yesterday"}, TOKEN),
            ({"post": "deviation", "experiment_id": eid, "kind": "exploded"}, TOKEN),
        ]
        words = ["bearer token", "bearer token", "is one of", "unknown experiment",
                 "was not selected", "clock skew", "ISO 8601", "'kind' is one of"]  # fmt: skip
        for (post, token), said in zip(bad, words, strict=True):
            lab.post(post, token)
            expected.append((lab.answers[-1][1], said))
        assert _cut_short(port, path) == (400, {"accepted": False, "error": (
            "the body was cut short (12 of 200 bytes; at most 1048576)")})  # fmt: skip
        notes = [
            {
                "post": "record",
                "record": {
                    "sample": "PG batch 7",
                    "protocol": "solid-state v3",
                    "safety_rules": ["no H2 above 600 C"],
                    "raw_data": ["s3://lab/raw/7"],
                },
            },
            {"post": "deviation", "kind": "instrument_state", "detail": "furnace 2 recalibrated"},
            {
                "post": "deviation",
                "experiment_id": eid,
                "kind": "operator_intervention",
                "detail": "crucible replaced",
                "at": (now - timedelta(hours=2)).isoformat(),
            },
        ]
        for post in notes:  # a lab clock behind the service's is recorded, not trusted for order
            assert lab.post(post)[0] == 200, lab.answers[-1]

    return first, expected


def test_bad_inputs_against_the_running_service(
    campaign_specs_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labreplay.suites.campaign.api import load_specs, select_specs

    [spec] = select_specs(load_specs(campaign_specs_source), "short-1")
    port, store = free_port(), tmp_path / "live.sqlite"
    path = f"/v1/campaigns/{urllib.parse.quote(spec.spec_id, safe='')}"
    others = [str(c["experiment_id"]) for c in spec.body["candidates"]]
    first, expected = _bad_inputs(port, f"{path}/posts", others[::-1])
    lab = _Lab(spec, f"http://127.0.0.1:{port}{path}", first)
    lab.start()
    monkeypatch.setenv("LABREPLAY_LIVE_TOKEN", TOKEN)
    code, out, err = cli("campaign", "live", "serve", "--specs", str(campaign_specs_source),
                         "--only", "short-1", "--store", str(store), "--port", str(port),
                         "--result-wait-s", "20", "--twin", "--json")  # fmt: skip
    lab.stop.set()
    lab.join(timeout=30)
    assert code == 0, err
    got = [(status, answer["error"]) for _, status, answer in lab.answers[: len(expected)]]
    assert [s for s, _ in got] == [401, 401, 400, 404, 409, 400, 400, 400]
    assert all(words in error for (_, error), (_, words) in zip(got, expected, strict=True))
    results = {r["branch"]: r for r in json.loads(out)}
    result = results["adaptive"]  # its twin plays the same stream, notes and record left out
    assert results["no-evidence"]["status"] == "complete"
    with Store(store) as db:
        events = db.events(result["run_id"])
        [row] = live_board(db)  # a record post and notes do not stop the running scores
    assert row["twin"] is not None and row["scores"]["prequential_log_loss"] is not None
    outcome = next(p for p in lab.accepted() if p["post"] == "outcome")
    assert _http("POST", f"http://127.0.0.1:{port}{path}/posts", body=outcome)[0] == 0  # over
    lab_events = [e["payload"] for e in events if e["kind"] == "lab"]
    refused = [p["error"] for p in lab_events if not p["accepted"]]
    assert refused[: len(got) + 1] == [e for _, e in got] + ["the body was cut short "
                                                            "(12 of 200 bytes; at most 1048576)"]  # fmt: skip
    accepted = [p["post"] for p in lab_events if p["accepted"]]
    assert accepted[: len(lab.accepted())] == lab.accepted()  # every 200 is in the chain
    record = live_record(events)
    assert record["version"] == RECORD_VERSION and set(RECORD_FIELDS) <= set(record)
    assert record["sample"] == "PG batch 7" and record["verifier"] is None
    assert record["model_and_harness"]["agent"] == "bayes"  # type: ignore[index]
    assert record["budgets"] and record["final_state"]["reason"]  # type: ignore[index]
    kinds = [d["kind"] for d in record["deviations"]]  # type: ignore[union-attr, index]
    assert kinds == ["instrument_state", "operator_intervention"]
    assert result["scores"]["adaptive_auc"] is not None
    assert cli("store", "verify", "--store", str(store))[0] == 0


def test_duplicate_late_aborted_and_a_forecast_after_its_outcome(
    pg_specs: list[EnvironmentSpec],
) -> None:
    spec = pg_specs[1]
    with LabService(TOKEN) as service:

        class Side:  # the lab answers each forecast asked with an outcome, over HTTP
            def forecast_asked(self, lab: LiveLab, eid: str) -> None:
                post = {"post": "outcome", "experiment_id": eid, "outcome": {"valid": True}}
                assert send_post(service.url, TOKEN, spec.spec_id, post) == (
                    200,
                    {"accepted": True},
                )

        lab = service.labs[spec.spec_id] = LiveLab(spec, Side(), wait_s=20)
        env = LiveEnv(spec, lab)
        env.reset(0)
        eid, other = env.candidate_ids[:2]
        send = lambda post: send_post(service.url, TOKEN, spec.spec_id, post)  # noqa: E731
        assert env.step({"type": "select_experiment", "experiment_id": eid}).accepted
        assert env.step({"type": "submit_forecast", "experiment_id": eid, **UNIFORM}).accepted
        outcome = {"post": "outcome", "experiment_id": eid, "outcome": {"valid": False}}
        late = {
            "post": "evidence",
            "experiment_id": eid,
            "kind": "xrd_scan",
            "item": {"item_id": "x"},
        }
        abort = {"post": "deviation", "experiment_id": eid, "kind": "aborted"}
        for post, words in ((outcome, "duplicate post"), (late, "late post"), (abort, "late post")):
            status, answer = send(post)
            assert status == 409 and words in answer["error"]
        claims = {c: 0.5 for c in env.claims}
        assert env.step(
            {"type": "close_experiment", "experiment_id": eid, "claims": claims}
        ).accepted
        env.submit_checkpoint({}, 1, None, "state")
        after = env.step({"type": "submit_forecast", "experiment_id": eid, **UNIFORM})
        assert not after.accepted and "not allowed in phase 'select'" in after.reason
        env.end()
        assert send(outcome) == (409, {"accepted": False, "error": "the campaign is over"})
    events = env.trajectory.events
    refused = [
        e["payload"] for e in events if e["kind"] == "action" and not e["payload"]["accepted"]
    ]
    assert refused[-1]["action"]["experiment_id"] == eid  # the forecast after its outcome
    lab_events = [e["payload"] for e in events if e["kind"] == "lab"]
    assert [p["accepted"] for p in lab_events] == [True, False, False, False]
    del other


def test_a_killed_serve_resumes_from_its_store(
    campaign_specs_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labreplay.suites.campaign.api import load_specs, select_specs

    [spec] = select_specs(load_specs(campaign_specs_source), "short-1")
    port, store = free_port(), tmp_path / "live.sqlite"
    path = f"/v1/campaigns/{urllib.parse.quote(spec.spec_id, safe='')}"
    args = ["campaign", "live", "serve", "--specs", str(campaign_specs_source), "--only",
            "short-1", "--store", str(store), "--port", str(port), "--result-wait-s", "60",
            "--json"]  # fmt: skip
    lab = _Lab(spec, f"http://127.0.0.1:{port}{path}")
    lab.hold_after = 2  # the 3rd experiment waits for its result: the service is killed there
    lab.start()
    env = {**os.environ, "LABREPLAY_LIVE_TOKEN": TOKEN}
    child = subprocess.Popen([sys.executable, "-m", "labreplay.cli.main", *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not lab.hold.is_set():
            assert child.poll() is None and time.monotonic() < deadline, "no 2 outcomes taken"
            time.sleep(0.05)
        while _stored_outcomes(store) < 2:  # written once the campaign took them (not at 200)
            assert child.poll() is None and time.monotonic() < deadline, "none written"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    before = len(lab.accepted())
    lab.hold_after = None
    lab.hold.clear()
    with Store(store) as db:  # what the killed run had recorded: replayed when it resumes
        [killed] = db.runs()
        stored = [e for e in db.events(killed.run_id) if e["kind"] == "lab"]
    assert killed.status == "running" and stored
    monkeypatch.setenv("LABREPLAY_LIVE_TOKEN", TOKEN)
    code, out, err = cli(*args)
    lab.stop.set()
    lab.join(timeout=30)
    assert code == 0, err
    [result] = json.loads(out)
    assert result["status"] == "complete"
    with Store(store) as db:
        events = db.events(result["run_id"])
    accepted = [e["payload"]["post"] for e in events if e["kind"] == "lab" and
                e["payload"]["accepted"]]  # fmt: skip
    taken = lab.accepted()
    assert len(taken) > before  # the campaign went on after the restart
    assert all(post in accepted for post in taken)  # nothing a lab was told was taken is lost
    assert len(accepted) == len({json.dumps(p, sort_keys=True) for p in accepted})  # no twice
    assert cli("store", "verify", "--store", str(store))[0] == 0


def _stored_outcomes(store: Path) -> int:
    """The outcome posts a running live store holds so far (0 before it exists)."""
    if not store.exists():
        return 0
    with Store(store, readonly=True) as db:
        return sum(
            e["kind"] == "lab" and e["payload"]["post"].get("post") == "outcome"
            for run in db.runs() for e in db.events(run.run_id)
        )  # fmt: skip


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_file, key_file = folder / "lab.crt", folder / "lab.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))  # fmt: skip
    return cert_file, key_file


def test_the_service_serves_https_with_a_certificate_and_nothing_in_clear(tmp_path: Path) -> None:
    import ssl

    cert, key = _self_signed(tmp_path)
    trusting = ssl.create_default_context(cafile=str(cert))
    with LabService(TOKEN, tls=(cert, key)) as service:
        assert service.url.startswith("https://127.0.0.1:")
        port = int(service.url.rsplit(":", 1)[1])
        silent = socket.create_connection(("127.0.0.1", port))  # connects, never says a word
        request = urllib.request.Request(
            f"{service.url}/v1/campaigns", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=30, context=trusting) as answer:
            assert json.loads(answer.read()) == {"campaigns": []}
        with urllib.request.urlopen(f"{service.url}/openapi.json", timeout=30,
                                    context=trusting) as answer:  # fmt: skip
            assert json.loads(answer.read())["info"]["version"] == protocol()["info"]["version"]
        plain = service.url.replace("https://", "http://") + "/openapi.json"
        with pytest.raises((urllib.error.URLError, http.client.HTTPException, OSError)):
            urllib.request.urlopen(plain, timeout=30)  # a plain-HTTP client gets no answer
        silent.close()  # it held no other lab's connection meanwhile


def test_tls_options_are_refused_in_one_line_and_create_nothing(
    campaign_specs_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABREPLAY_LIVE_TOKEN", TOKEN)
    cert, key = _self_signed(tmp_path)
    store = tmp_path / "live.sqlite"
    base = ("campaign", "live", "serve", "--specs", str(campaign_specs_source), "--store",
            str(store), "--port", str(free_port()))  # fmt: skip
    for extra, words in [
        (("--tls-cert", str(cert)), "needs --tls-key too"),
        (("--tls-key", str(key)), "needs --tls-cert too"),
        (("--tls-cert", str(tmp_path / "none.crt"), "--tls-key", str(key)), "not found"),
        (("--tls-cert", str(key), "--tls-key", str(key)), "do not load"),
    ]:
        code, _, err = cli(*base, *extra)
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
        assert not store.exists()
