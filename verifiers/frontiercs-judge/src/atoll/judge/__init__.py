"""atoll.judge: the FrontierCS judge, as a client, an embedded server and a Harbor verifier.

The verifier `frontiercs-judge` (`atoll.judge.verifier`), the job plugin that
starts the embedded judge for a job (`atoll.judge.job_plugin`), `atoll judge`
and `atoll task frontiercs`, and the packaged `polyomino_packing` task.
Importing this package loads only atoll.core's light part; the names below
(its public face: other distributions import these and no module of it) load
when first used.
"""

from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.judge.client import SOURCE_FILES
    from atoll.judge.compiler import COMPILE_LIMITS, FLAGS
    from atoll.judge.embedded import JUDGE_URL_ENV
    from atoll.judge.provision import JudgeForTrials, JudgeNotReady
    from atoll.judge.scorer import SCORER_NAME, JudgeRecord, describe_judge, judge_url

# What other distributions use of the judge (Guidance-TTT scores through it, FrontierSmith
# compiles as it does), imported on first use: every `atoll` call loads this package.
__getattr__ = exports(
    __name__,
    {
        "SOURCE_FILES": "atoll.judge.client",
        "COMPILE_LIMITS": "atoll.judge.compiler",
        "FLAGS": "atoll.judge.compiler",
        "JUDGE_URL_ENV": "atoll.judge.embedded",
        "JudgeForTrials": "atoll.judge.provision",
        "JudgeNotReady": "atoll.judge.provision",
        "SCORER_NAME": "atoll.judge.scorer",
        "JudgeRecord": "atoll.judge.scorer",
        "describe_judge": "atoll.judge.scorer",
        "judge_url": "atoll.judge.scorer",
    },
)

__all__ = [
    "COMPILE_LIMITS",
    "FLAGS",
    "JUDGE_URL_ENV",
    "SCORER_NAME",
    "SOURCE_FILES",
    "JudgeForTrials",
    "JudgeNotReady",
    "JudgeRecord",
    "describe_judge",
    "judge_url",
]
