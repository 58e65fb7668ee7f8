"""`kerneldojo`: run the pipeline, re-run one stage, list stage runs and their lineage.

Every failure is one `error:` line on stderr and a non-zero exit (`--debug` shows the traceback instead).
SIGTERM, SIGINT and SIGHUP end the CLI in order: the running stage run is marked failed (warehouse and
MLflow) and the CLI's Prefect server is stopped. A SIGKILLed CLI's runs are marked failed by the next
command that opens the warehouse, and its Prefect server exits by itself (`flows/prefect_server.py`).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup
from typer.exceptions import TyperException

from schemas.config import STAGES, ConfigError, load_config
from warehouse.home import Home
from flows.script import killed_line, signals_as_killed
from warehouse.process import Killed
from warehouse.store import WarehouseError
from verifier.signed_store import VerdictImportError

MAX_ERROR_CHARS = 600
# Errors in what the user asked for, whose messages are written for them: no exception class in the line.
USER_ERRORS = (ConfigError, WarehouseError, VerdictImportError)


def _one_line(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    if not isinstance(exc, USER_ERRORS + (Killed,)):
        message = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS - 1] + "…"


def _error(message: str) -> None:
    typer.echo(f"{typer.style('error:', fg='red', bold=True)} {message}", err=True)


class OneLineErrors(TyperGroup):
    """Runs every command with terminating signals turned into `Killed`, and reports any failure as one
    line on stderr with a non-zero exit; with `--debug` the exception propagates with its traceback."""

    def invoke(self, ctx: typer.Context):
        with signals_as_killed():
            try:
                return super().invoke(ctx)
            except (typer.Exit, typer.Abort, TyperException):  # typer's own exits and usage errors
                raise
            except BaseException as exc:
                if ctx.params.get("debug") or not isinstance(exc, (Exception, Killed)):
                    raise
                _error(_describe(exc))
                code = 128 + exc.signal if isinstance(exc, Killed) else 2 if isinstance(exc, USER_ERRORS) else 1
                raise typer.Exit(code) from None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, Killed):
        return killed_line(exc)
    # A stage run can only have failed if stage code was loaded; no need to load it to ask.
    common = sys.modules.get("tasks.common")
    failed = common.failed_stage_run(exc) if common else None
    if failed:
        stage, run_id = failed
        return f"{stage} {run_id} failed: {_one_line(exc)}; see --debug"
    return _one_line(exc) if isinstance(exc, USER_ERRORS) else f"{_one_line(exc)}; see --debug"


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="kerneldojo: train a model to write correct, fast kernels from PyTorch operator graphs.")
console = Console(width=None if sys.stdout.isatty() else 160)

CONFIG_HELP = "pipeline YAML (default: the embedded tiny config, same as configs/tiny.yaml)"
SET_HELP = "override a config key, e.g. --set sft.epochs=5 (repeatable)"


_debug = False  # --debug, for the whole process


@app.callback()
def options(debug: bool = typer.Option(False, "--debug", help="show full tracebacks and Prefect's own error logs "
                                       "instead of one-line errors")) -> None:
    """kerneldojo: train a model to write correct, fast kernels from PyTorch operator graphs."""
    global _debug
    _debug = debug


def _check_stage(name: str) -> None:
    if name not in STAGES:
        raise ConfigError(f"unknown stage {name!r}; stages are {', '.join(STAGES)}")


def _open_warehouse(cfg):
    """The warehouse, with runs whose process vanished marked failed (None when there is none yet)."""
    from warehouse.reconcile import reconcile
    from warehouse.store import Warehouse

    home = Home.of(cfg)
    if not home.warehouse_path.exists():
        return None
    wh = Warehouse(home.warehouse_path)
    for run in reconcile(wh, home.root):
        typer.echo(f"marked {run.id} failed: {run.error}", err=True)
    return wh


class _RunFailuresLeftToTheCLI(logging.Filter):
    """Keeps Prefect's reports of a failed or crashed run (tracebacks included) off the terminal, where the
    CLI's one-line error says it; they still reach the Prefect server's run logs."""

    LOGGERS = ("prefect.flow_runs", "prefect.task_runs", "prefect.engine")

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno >= logging.ERROR and record.name.startswith(self.LOGGERS))


def _start_prefect() -> None:
    """Prefect for this CLI: its own server (see flows/prefect_server.py), and, unless --debug, run failures
    reported by the CLI's one line alone."""
    from flows.prefect_server import serve_prefect

    serve_prefect()
    if not _debug:
        import prefect.main  # noqa: F401  (configures Prefect's logging: its console handler exists from here)
        from prefect.logging.handlers import PrefectConsoleHandler

        for handler in logging.getLogger().handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.addFilter(_RunFailuresLeftToTheCLI())


def _where_to_look(config) -> None:
    from warehouse.tracking import default_tracking_uri

    home = Home.of(config)
    console.print("\n[bold]Where to look[/]")
    console.print(f"  warehouse (DuckDB): {home.warehouse_path}   -> kerneldojo runs")
    console.print(f"  MLflow UI:  MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false mlflow ui --backend-store-uri "
                  f"{default_tracking_uri(home.root)}")
    console.print("  Prefect UI: prefect server start --host 127.0.0.1   (then http://127.0.0.1:4200)")


def _print_held_out(cfg, runs: dict[str, str]) -> None:
    """What the policy scores on problems it never trained on, after each evaluated stage, and what each stage
    changed (the pipeline's parent MLflow run holds the same, `held_out.md`)."""
    from flows.pipeline import held_out_report

    report = held_out_report(_open_warehouse(cfg), runs, cfg.evaluate.max_turns)
    if report:
        console.print(f"\n[bold]Held-out ({cfg.evaluate.split} split), by the stage evaluated[/]")
        console.print(report, markup=False)


@app.command()
def run(config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
        set_: list[str] = typer.Option([], "--set", help=SET_HELP),
        from_run: Optional[str] = typer.Option(None, "--from-run", help="continue after this stage run (e.g. a "
                                               "distill run: SFT onwards on its data; its lineage stands for the "
                                               "stages before)")) -> None:
    """Run the whole DAG: synthesize -> hints -> distill -> sft -> rft -> warmup_rl -> leap_rl -> evaluate."""
    cfg = load_config(config, set_)
    if from_run:
        from flows.pipeline import stages_done

        warehouse = _open_warehouse(cfg)
        if warehouse is None:
            raise WarehouseError(f"no warehouse at {Home.of(cfg).warehouse_path} yet: --from-run names a run of it")
        cfg.check_paths([s for s in STAGES if s not in stages_done(warehouse, from_run)])
    else:
        cfg.check_paths()
    from training.distributed import check_split

    for name in STAGES:  # a late stage's batches that cannot split over the ranks: said before anything starts
        check_split(cfg, name, cfg.distributed.processes)
    _open_warehouse(cfg)
    _start_prefect()
    from flows.pipeline import pipeline

    started = time.perf_counter()
    runs = pipeline(config_path=config, overrides=set_, from_run=from_run)
    console.print(f"\n[bold green]pipeline finished[/] in {time.perf_counter() - started:.0f} s")
    _print_runs(cfg, only=set(runs.values()))
    _print_held_out(cfg, runs)
    _where_to_look(cfg)


@app.command()
def stage(name: str = typer.Argument(..., help=f"one of: {', '.join(STAGES)}"),
          from_run: Optional[str] = typer.Option(None, "--from-run", help="stage run id of the upstream stage "
                                                 "(default: its latest succeeded run)"),
          config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
          set_: list[str] = typer.Option([], "--set", help=SET_HELP),
          resume: Optional[str] = typer.Option(None, "--resume", help="continue an interrupted warmup_rl/leap_rl "
                                               "run from its last checkpoint")) -> None:
    """Re-run one stage against an earlier stage run (old runs and their rows stay untouched), or resume one."""
    _check_stage(name)
    cfg = load_config(config, set_)
    if not resume:
        cfg.check_paths([name])
    _open_warehouse(cfg)
    _start_prefect()
    from flows.stages import stage as stage_flow

    run_id = stage_flow(name=name, from_run=from_run, config_path=config, overrides=set_, resume=resume)
    console.print(f"\n[bold green]{name} finished:[/] {run_id}")
    _print_runs(cfg, only={run_id})


@app.command(name="eval")
def eval_(from_run: Optional[str] = typer.Option(None, "--from-run", help="evaluate the policy of this stage run "
                                                 "(sft, rft, warmup_rl, leap_rl)"),
          model: Optional[str] = typer.Option(None, "--model", help="evaluate a HF model folder"),
          endpoint: Optional[str] = typer.Option(None, "--endpoint", help="evaluate an OpenAI-compatible endpoint "
                                                 "(e.g. http://127.0.0.1:8000/v1; key from evaluate.endpoint."
                                                 "api_key_env)"),
          endpoint_model: str = typer.Option("default", "--endpoint-model", help="the model name the endpoint serves"),
          template: bool = typer.Option(False, "--template", help="evaluate the template teacher (a floor)"),
          kernelbench: Optional[str] = typer.Option(None, "--kernelbench", help="a KernelBench checkout: evaluate "
                                                    "on its problems instead of the run's held-out split"),
          levels: list[int] = typer.Option([], "--level", help="KernelBench level (repeatable; default 1 and 2)"),
          limit: int = typer.Option(0, "--limit", help="first N problems of each level (0 = all)"),
          config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
          set_: list[str] = typer.Option([], "--set", help=SET_HELP)) -> None:
    """Evaluate a policy, a model folder, an endpoint or the template teacher with the KernelBench protocol
    (fast_p against eager and torch.compile, accuracy by turn with feedback, pass@k), on KernelBench or a held-out
    split; one `evaluate` stage run, compared with others by `kerneldojo compare`."""
    from flows.evaluation import eval_overrides, evaluate_flow
    from warehouse.reports import compare_table

    cfg = load_config(config, [*eval_overrides(from_run, model, endpoint, endpoint_model, template, kernelbench,
                                               levels, limit), *set_])
    cfg.check_paths(["evaluate"])
    _open_warehouse(cfg)
    _start_prefect()
    run_id = evaluate_flow(from_run=from_run, model_dir=model, endpoint=endpoint, endpoint_model=endpoint_model,
                           template=template, kernelbench_dir=kernelbench, levels=levels or None,
                           limit_per_level=limit, config_path=config, overrides=set_)
    console.print(f"\n[bold green]evaluate finished:[/] {run_id}")
    console.print(compare_table(_open_warehouse(cfg), [run_id]), markup=False)


@app.command()
def compare(run_ids: list[str] = typer.Argument(..., help="evaluate runs to put side by side"),
            config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
            set_: list[str] = typer.Option([], "--set", help=SET_HELP + "; e.g. --set home=.kerneldojo/mini"),
            plot: Optional[str] = typer.Option(None, "--plot", help="also draw them side by side into this PNG: "
                                               "accuracy by turn and fast_p against p, overall and per level")) -> None:
    """Evaluations side by side (from the warehouse): accuracy by turn, fast_p, speedups, pass@k, verdict mix,
    overall and per KernelBench level; then each against the first on the problems they share, paired problem by
    problem with the change's standard error. The same metrics are in MLflow's compare view."""
    from warehouse.reports import compare_table, paired_change_table, problem_outcomes

    cfg = load_config(config, set_)
    wh = _open_warehouse(cfg)
    if wh is None:
        raise WarehouseError(f"no warehouse at {Home.of(cfg).warehouse_path} yet: run `kerneldojo run` first")
    console.print(compare_table(wh, run_ids), markup=False)
    if plot is not None:
        _plot_evaluations(wh, run_ids, plot)
    if len(run_ids) > 1:
        turn = min(3, cfg.evaluate.max_turns)
        outcomes = {run_id: problem_outcomes(wh, run_id, turn) for run_id in dict.fromkeys(run_ids)}
        console.print("\n" + paired_change_table([outcomes], [(run_ids[0], other) for other in run_ids[1:]], turn),
                      markup=False)
    tracked = [run.mlflow_run_id for run in map(wh.stage_run, dict.fromkeys(run_ids)) if run.mlflow_run_id]
    if tracked:
        from tasks.prefect_ui import mlflow_compare_link
        from warehouse.tracking import Tracker

        tracker = Tracker(Home.of(cfg).root)
        console.print(f"\nMLflow compare view: {mlflow_compare_link(tracker.experiment_id, tracked)}\n"
                      f"  (served by `{tracker.ui_command()}`)", markup=False, soft_wrap=True)


def _plot_evaluations(wh, run_ids: list[str], path: str) -> None:
    import re
    from pathlib import Path

    from tasks.plots import close, evaluations_side_by_side
    from training.evaluation import FAST_P
    from warehouse.reports import compared_evaluations, metric_levels

    columns = compared_evaluations(wh, list(dict.fromkeys(run_ids)))
    metrics = {f"{run_id} ({who})": m for run_id, who, _, m in columns}
    # the turns the evaluations themselves ran (this command's config need not be theirs)
    most_turns = max((int(found[1]) for m in metrics.values() for k in m
                      if (found := re.fullmatch(r"accuracy/turn_(\d+)", k))), default=1)
    scopes = ["", *(f"{level}/" for level in metric_levels(list(metrics.values())))]
    fig = evaluations_side_by_side(metrics, scopes, most_turns, FAST_P)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    close(fig)
    console.print(f"\nplot: {path}", markup=False)


@app.command()
def runs(config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
         stage_name: Optional[str] = typer.Option(None, "--stage", help="only runs of this stage"),
         set_: list[str] = typer.Option([], "--set", help=SET_HELP + "; e.g. --set home=.kerneldojo/mini")) -> None:
    """A table of stage runs with their lineage (parent runs)."""
    if stage_name is not None:
        _check_stage(stage_name)
    _print_runs(load_config(config, set_), stage=stage_name)


@app.command()
def export(run_id: str = typer.Argument(..., help="a stage run whose problems or SFT examples to export"),
           out_dir: str = typer.Argument(..., help="folder for the HF dataset (save_to_disk) and data.parquet"),
           config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP)) -> None:
    """Export a run's problems (synthesize, hints) or SFT examples (distill, rft) as a Hugging Face dataset."""
    import json

    from operators.imports import export_problems, export_rows

    cfg = load_config(config, [])
    wh = _open_warehouse(cfg)
    if wh is None:
        raise WarehouseError(f"no warehouse at {Home.of(cfg).warehouse_path} yet: run `kerneldojo run` first")
    wh.succeeded_run(run_id)
    if wh.count("problems", run_id):
        path = export_problems(wh.problems(run_id), out_dir)
        what = f"{wh.count('problems', run_id)} problems"
    elif wh.count("sft_examples", run_id):
        rows = [{**r, "messages": json.dumps(r["messages"])} for r in wh.sft_examples(run_id)]
        path = export_rows(rows, out_dir)
        what = f"{len(rows)} SFT examples"
    else:
        raise WarehouseError(f"stage run {run_id} holds no problems or SFT examples to export")
    console.print(f"exported {what} to {path}/dataset and {path}/data.parquet")


verdicts_app = typer.Typer(no_args_is_help=True, help="Move a home's verdict store to another home (a stage cut "
                           "short on one machine goes on from its verdicts on another).")
app.add_typer(verdicts_app, name="verdicts")


def _verdict_store_dir(config: Optional[str], set_: list[str]):
    from pathlib import Path

    cfg = load_config(config, set_)
    return Path(cfg.verifier.cache_dir or Home.of(cfg).cache / "verifier")


@verdicts_app.command("export")
def verdicts_export(out: str = typer.Argument(..., help="file to write (JSON lines, xz)"),
                    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
                    set_: list[str] = typer.Option([], "--set", help=SET_HELP)) -> None:
    """Write the home's verdicts and the references known to run, unsigned (the home's secret stays home)."""
    from verifier.pool import export_verdicts

    console.print(f"exported {export_verdicts(_verdict_store_dir(config, set_), out)} verdict store entries to {out}")


@verdicts_app.command("import")
def verdicts_import(source: str = typer.Argument(..., help="a file of `kerneldojo verdicts export`"),
                    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
                    set_: list[str] = typer.Option([], "--set", help=SET_HELP)) -> None:
    """Sign another home's exported verdicts with this home's secret: importing vouches for that home."""
    from verifier.pool import import_verdicts

    console.print(f"imported {import_verdicts(_verdict_store_dir(config, set_), source)} verdict store entries "
                  f"from {source}")


def _print_runs(cfg, only: set[str] | None = None, stage: str | None = None) -> None:
    wh = _open_warehouse(cfg)
    if wh is None:
        console.print(f"no warehouse at {Home.of(cfg).warehouse_path} yet: run `kerneldojo run` first")
        return
    table = Table(title=f"stage runs in {wh.path}")
    for col in ("stage run", "stage", "status", "parent", "started", "seconds", "summary"):
        table.add_column(col, overflow="fold")
    for r in wh.stage_runs(stage):
        if only and r.id not in only:
            continue
        summary = wh.summary(r.id)
        seconds = f"{summary.get('wall_seconds', '')}"
        text = ", ".join(f"{k}={v}" for k, v in summary.items() if k != "wall_seconds" and not isinstance(v, dict))
        if r.status.value == "failed" and r.error:  # why it failed says more than a partial summary
            text = " ".join(r.error.split())
        color = {"succeeded": "green", "failed": "red"}.get(r.status.value, "yellow")
        table.add_row(r.id, r.stage, f"[{color}]{r.status.value}[/]", ",".join(r.parent_ids) or "-",
                      r.started.strftime("%Y-%m-%d %H:%M:%S"), seconds, text[:160])
    console.print(table)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":
    sys.exit(main())
