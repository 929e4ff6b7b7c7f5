"""`atoll emit frontiersmith`: the command line of the pipeline, `reconcile` and `cleanup`.

Everything that can be wrong with the command line is found before a cent
is paid: flags, prices, the seed set, the environment, the key, the
endpoint, the budget against one request's reservation, and on `--resume`
the run's fingerprint and its uncertain requests. Each is one error line.
"""

from __future__ import annotations

from pathlib import Path

import typer

from atoll.frontiersmith.bundle.spec import DEFAULT_BASE_IMAGE
from atoll.frontiersmith.config import DEFAULT_BASE_URL, DEFAULT_MAX_COMPLETION_TOKENS

# Plain help: a boolean option shows as a flag (the rich layout prints a `<bool>` value after
# it), and each default is written into the help text, since a flag left out is `None` here
# (on --resume, "not given" must be told apart from "given the default").
app = typer.Typer(
    help="Synthesize open-ended optimization tasks from closed problems, check them by "
    "execution in Harbor, and emit them as Harbor tasks.",
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    rich_markup_mode=None,
)


# The pipeline's options, one constant each, so that `emit` reads as what it does.
_SEEDS = typer.Option(
    None, "--seeds", help="A seed set (textbook, domains) or a JSON/JSONL file. [required]"
)
_TARGET = typer.Option(None, "--target", help="Stop once this many tasks are accepted. [required]")
_BUDGET = typer.Option(
    None, "--budget", help="The most to spend on model calls, in USD. [required]"
)
_MODEL = typer.Option(None, "--model", help="The model name sent with every request. [required]")
_BASE_URL = typer.Option(
    None, "--base-url", help=f"OpenAI-compatible endpoint (…/v1). [default: {DEFAULT_BASE_URL}]"
)
_API_KEY_ENV = typer.Option(
    None,
    "--api-key-env",
    help="Environment variable holding the key. [default: OPENAI_API_KEY]",
)
_PRICE_IN = typer.Option(
    None,
    "--price-in",
    help="USD per million input tokens. [default: from litellm's bundled price table]",
)
_PRICE_OUT = typer.Option(
    None,
    "--price-out",
    help="USD per million output tokens. [default: from litellm's bundled price table]",
)
_WORKERS = typer.Option(None, "--workers", help="Seeds processed at a time. [default: 1]")
_ENVIRONMENT = typer.Option(
    None,
    "--environment",
    help="atoll-local, docker, or a Harbor environment. [default: docker when an engine answers "
    "and holds the tasks' base image, as `atoll run` chooses, else atoll-local]",
)
_MAX_CANDIDATES = typer.Option(
    None, "--max-candidates", help="Try at most this many seeds. [default: every seed]"
)
_SOLUTIONS = typer.Option(
    None, "--solutions", help="Independent solution samples per candidate. [default: 3]"
)
_LANGUAGE = typer.Option(
    None,
    "--language",
    help="What the tasks' programs are written in: python, or cpp (C++17, compiled with "
    "the FrontierCS judge's g++ flags). [default: python]",
)
_MAX_REPAIRS = typer.Option(
    None, "--max-repairs", help="Repairs per stage and candidate. [default: 2]"
)
_MIN_DIVERGENCE = typer.Option(
    None, "--min-divergence", help="Share of sample pairs that must be distinct. [default: 0.3]"
)
_MIN_SCORE_SPREAD = typer.Option(
    None,
    "--min-score-spread",
    help="Least mean per-case score distance for a pair of feasible samples to count as "
    "distinct in execution. [default: 0.001]",
)
_MIN_EXECUTION_DIVERSITY = typer.Option(
    None,
    "--min-execution-diversity",
    help="Share of feasible sample pairs that must be distinct in execution (see "
    "--min-score-spread). [default: 0.3]",
)
_ROUNDS = typer.Option(
    None,
    "--rounds",
    help="Rounds of synthesis: from round 2 on, the public statements of the tasks the round "
    "before accepted (never their tests) are the seeds, asked first to be hardened (a tighter "
    "bound, a larger instance family). --target counts per round. [default: 1]",
)
_POPULATION = typer.Option(
    None,
    "--population",
    help="After each round, keep the K accepted tasks of each family (the tasks descended from "
    "one seed) whose samples are most diverse in execution; the others move to DIR/dropped and "
    "seed no later round. [default: no cap]",
)
_ROLLOUT_TASKS = typer.Option(
    None,
    "--rollout-tasks",
    help="Rollouts (a Harbor trial with --rollout-agent) on this many accepted tasks. [default: 0]",
)
_ROLLOUT_AGENT = typer.Option(
    None,
    "--rollout-agent",
    help="The agent of a rollout's Harbor trial (pi-docker, terminus-2, oracle for a dry "
    "run, any atoll or Harbor agent, module:Class), with --model, --base-url and "
    "--api-key-env. [default: pi-docker]",
)
_ROLLOUT_TIMEOUT = typer.Option(
    None, "--rollout-timeout", help="A rollout agent's time limit, in seconds. [default: 1800]"
)
_MAX_COMPLETION_TOKENS = typer.Option(
    None,
    "--max-completion-tokens",
    help=f"Output tokens allowed per request (bounds each reservation). "
    f"[default: {DEFAULT_MAX_COMPLETION_TOKENS}]",
)
_BASE_IMAGE = typer.Option(
    None, "--base-image", help=f"The tasks' base image. [default: {DEFAULT_BASE_IMAGE}]"
)
_WORKER_PRICE = typer.Option(
    None,
    "--worker-price",
    help="What an hour of trial time costs you, in USD (the report's worker cost). "
    "[default: none: the report says the worker cost is unknown]",
)
_OUT = typer.Option(
    None, "--out", help="Output directory: tasks, report, run state. [required for a new run]"
)
_RESUME = typer.Option(
    None,
    "--resume",
    help="Resume this run (found through the run index, or in --out). [default: a new run]",
)
_RAISE_BUDGET = typer.Option(
    False, "--raise-budget", help="On --resume: raise the ledger's limit to --budget."
)
_SEARCH_STEPS = typer.Option(
    None,
    "--search-steps",
    help="After export, run N steps of a search-only Guidance-TTT search on each accepted "
    "task and report the best score found against the reference. The executor is --model "
    "at --base-url, paid through the run's ledger (--budget); guidance is sampled through "
    "the Reef REEF_URL names (REEF_TOKEN), in front of the guidance model "
    "(`atoll stack up --training off --upstream-url URL --upstream-model NAME`). "
    "--resume RUN_ID --search-steps N continues the searches. Exits 5 if a task's "
    "search fails. [default: no search]",
)
_SEARCH_GROUPS = typer.Option(
    None, "--search-groups", help="With --search-steps: parents per step (G). [default: 2]"
)
_SEARCH_ROLLOUTS = typer.Option(
    None,
    "--search-rollouts",
    help="With --search-steps: rollouts per parent (R). [default: 2]",
)


@app.callback(invoke_without_command=True)
def emit(
    ctx: typer.Context,
    seeds: str = _SEEDS,
    target: int = _TARGET,
    budget: str = _BUDGET,
    model: str = _MODEL,
    base_url: str = _BASE_URL,
    api_key_env: str = _API_KEY_ENV,
    price_in: str = _PRICE_IN,
    price_out: str = _PRICE_OUT,
    workers: int = _WORKERS,
    environment: str = _ENVIRONMENT,
    max_candidates: int = _MAX_CANDIDATES,
    solutions: int = _SOLUTIONS,
    language: str = _LANGUAGE,
    max_repairs: int = _MAX_REPAIRS,
    min_divergence: float = _MIN_DIVERGENCE,
    min_score_spread: float = _MIN_SCORE_SPREAD,
    min_execution_diversity: float = _MIN_EXECUTION_DIVERSITY,
    rounds: int = _ROUNDS,
    population: int = _POPULATION,
    rollout_tasks: int = _ROLLOUT_TASKS,
    rollout_agent: str = _ROLLOUT_AGENT,
    rollout_timeout: float = _ROLLOUT_TIMEOUT,
    max_completion_tokens: int = _MAX_COMPLETION_TOKENS,
    base_image: str = _BASE_IMAGE,
    worker_price: str = _WORKER_PRICE,
    out: Path = _OUT,
    resume: str = _RESUME,
    raise_budget: bool = _RAISE_BUDGET,
    search_steps: int = _SEARCH_STEPS,
    search_groups: int = _SEARCH_GROUPS,
    search_rollouts: int = _SEARCH_ROLLOUTS,
) -> None:
    """Run the FrontierSmith pipeline (see the plugin README for the model protocol)."""
    if ctx.invoked_subcommand is not None:
        return
    from atoll.frontiersmith.command import Flags, run_command

    flags = Flags(
        seeds=seeds,
        target=target,
        budget=budget,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        price_in=price_in,
        price_out=price_out,
        workers=workers,
        environment=environment,
        max_candidates=max_candidates,
        solutions=solutions,
        language=language,
        max_repairs=max_repairs,
        min_divergence=min_divergence,
        min_score_spread=min_score_spread,
        min_execution_diversity=min_execution_diversity,
        rounds=rounds,
        population=population,
        rollout_tasks=rollout_tasks,
        rollout_agent=rollout_agent,
        rollout_timeout=rollout_timeout,
        max_completion_tokens=max_completion_tokens,
        base_image=base_image,
        worker_price=worker_price,
        out=out,
        resume=resume,
        raise_budget=raise_budget,
        search_steps=search_steps,
        search_groups=search_groups,
        search_rollouts=search_rollouts,
    )
    raise typer.Exit(run_command(flags))


@app.command("reconcile")
def reconcile(
    run_id: str = typer.Argument(..., help="The run whose uncertain requests to settle."),
    out: Path = typer.Option(
        None, "--out", help="The run's output directory (default: from the run index)."
    ),
    request: list[int] = typer.Option(None, "--request", help="Only this receipt id (repeatable)."),
    cost: str = typer.Option(
        None, "--cost", help="Settle at this many USD (one --request); default: the reservation."
    ),
    note: str = typer.Option(
        "", "--note", help="Why, for the record (e.g. what the provider's dashboard shows)."
    ),
    list_only: bool = typer.Option(False, "--list", help="Only list the uncertain requests."),
) -> None:
    """Settle uncertain requests (sent, answer lost) so that a resume may continue."""
    from atoll.frontiersmith.upkeep import reconcile_command

    raise typer.Exit(reconcile_command(run_id, out, request or [], cost, note, list_only))


@app.command("cleanup")
def cleanup(
    run_id: str = typer.Argument(..., help="The run whose leftovers to remove."),
    out: Path = typer.Option(
        None, "--out", help="The run's output directory (default: from the run index)."
    ),
    remove_work: bool = typer.Option(
        False, "--remove-work", help="Also delete the candidates' working files and trial logs."
    ),
) -> None:
    """Remove what a killed run's trials left behind (containers, trial roots), by their receipts."""
    from atoll.frontiersmith.upkeep import cleanup_command

    raise typer.Exit(cleanup_command(run_id, out, remove_work))
