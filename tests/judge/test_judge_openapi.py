"""The judge's published OpenAPI description: served, true to the routes, and fuzzed.

The fuzz test generates requests from the description the server serves
(schemathesis, valid and invalid data, a fixed seed, a bounded number of
examples per operation) and sends them to the real server: no answer may
be a server error, each must arrive within the bound, and each must be one
the description documents, in the shape it documents.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.routing import Route

from atoll.judge import openapi
from atoll.judge.api import SubmissionFields
from atoll.judge.embedded import EmbeddedJudge, JudgeSetup
from atoll.judge.server import create_app
from atoll.judge.service import JudgeService

pytestmark = pytest.mark.timeout(300)

EXAMPLES_PER_OPERATION = 200
SEED = 20_251_203
ANSWER_WITHIN_S = 10.0
# A full queue's 503 is documented back-pressure, not a failure; every other 5xx is.
CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

STATS: Counter[str] = Counter()


def described_routes(document: dict) -> set[tuple[str, str]]:
    return {(path, method.upper()) for path, item in document["paths"].items() for method in item}


def test_the_description_is_served_and_names_every_route(small_judge: EmbeddedJudge) -> None:
    served = httpx.get(f"{small_judge.url}{openapi.PATH}", timeout=10)
    assert served.status_code == 200
    document = served.json()
    assert document == openapi.document(["0"])
    assert document["openapi"].startswith("3.1")
    app = create_app(cast(JudgeService, None))  # only its routes are read
    routes = {
        (route.path, method)
        for route in app.routes
        if isinstance(route, Route)
        for method in (route.methods or ()) - {"HEAD"}
    }
    assert routes == described_routes(document)
    schemas = document["components"]["schemas"]
    assert schemas["SubmissionFields"]["required"] == ["pid"]
    assert set(schemas["SubmissionFields"]["properties"]) == set(SubmissionFields.model_fields)
    assert document["paths"]["/problem/{pid}/statement"]["get"]["parameters"][0]["schema"][
        "examples"
    ] == ["0"]


@pytest.fixture(scope="module")
def fuzz_judge(tmp_path_factory: pytest.TempPathFactory, small_problems: Path) -> Iterator[str]:
    """A judge of its own: a short queue, so fuzzed programs do not pile up behind each other."""
    setup = JudgeSetup(
        problems_dir=small_problems,
        state_dir=tmp_path_factory.mktemp("fuzz-state"),
        workers=2,
        max_queue=2,
    )
    with EmbeddedJudge(setup) as judge:
        started = time.monotonic()
        yield judge.url
        STATS["seconds"] = round(time.monotonic() - started)
        print(
            f"\nfuzz: {STATS['examples']} requests in {STATS['seconds']} s, "
            f"{STATS['server_errors']} server errors, statuses {dict(sorted(STATS.items()))}"
        )


# Built as the server builds it (the test above checks that the server serves this).
schema = schemathesis.openapi.from_dict(openapi.document(["0"]))
schema.config.seed = SEED
schema.config.generation.update(
    modes=[schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE],
    max_examples=EXAMPLES_PER_OPERATION,
    deterministic=True,
)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@pytest.mark.slow
def test_fuzzed_requests_get_documented_answers(case: schemathesis.Case, fuzz_judge: str) -> None:
    response = case.call(base_url=fuzz_judge, timeout=ANSWER_WITHIN_S)
    STATS["examples"] += 1
    STATS[f"http_{response.status_code}"] += 1
    if response.status_code >= 500 and response.status_code != 503:
        STATS["server_errors"] += 1
    assert response.status_code < 500 or response.status_code == 503, response.text
    case.validate_response(response, checks=CHECKS)
