"""One test per hook (``test_hook_<name>``); a meta-test fails when a hook has none."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import pytest

from arena_core import (
    ArenaHooks,
    BackendSpec,
    ClosedLoopShape,
    Figures,
    HardwareDetection,
    HardwareProfile,
    LedgerLine,
    PredictorSpec,
    RunInfo,
    RunnerSpec,
    RunResult,
    ScorerSpec,
    ToolAvailability,
    UsageError,
    WorkloadPrediction,
    WorkloadSpec,
    hookimpl,
    make_plugin_manager,
)
from arena_core.config import ArenaConfig
from arena_core.docgen import hookspec_functions
from arena_core.testing import plugin_manager_with, run_cli

RUN = RunInfo(run_id="r1", model="gemma-3-270m", hardware="cpu-host", backend="llama-cpp", workloads=("chat",), instrument="native", scale=0.1)


def test_every_hook_has_a_test():
    tested = {name[len("test_hook_") :] for name in vars(sys.modules[__name__]) if name.startswith("test_hook_")}
    missing = [name for name, _, _ in hookspec_functions() if name not in tested]
    assert missing == [], f"hooks without a test_hook_<name> test: {missing}"


def test_hook_arena_register_workloads():
    tiny = WorkloadSpec(
        name="tiny-chat",
        title="Tiny chat",
        description="A small closed-loop test.",
        runner="llama-benchy",
        shape=ClosedLoopShape(prompt_tokens=16, generated_tokens=16, concurrency=2, runs=1),
    )

    class Plugin:
        @hookimpl
        def arena_register_workloads(self, register):
            register(tiny)

    registry = ArenaHooks(plugin_manager_with(Plugin(), builtins=("arena_workloads",))).registry
    assert registry.workloads["tiny-chat"].item is tiny
    assert registry.workloads["tiny-chat"].plugin == "Plugin"
    assert registry.workloads["chat"].plugin == "arena_workloads"


def test_hook_arena_register_runners():
    spec = RunnerSpec(
        name="echo-runner",
        description="Runs nothing; only a test.",
        loop="closed",
        instruments=("native",),
        create=lambda instrument: None,  # type: ignore[arg-type,return-value]
        check_external=lambda: ToolAvailability(available=False, detail="pip install echo-tool"),
    )

    class Plugin:
        @hookimpl
        def arena_register_runners(self, register):
            register(spec)

    registration = ArenaHooks(plugin_manager_with(Plugin())).registry.lookup("runners", "echo-runner")
    assert registration.plugin == "Plugin"
    assert registration.item.check_external().detail == "pip install echo-tool"


def test_hook_arena_register_backends():
    spec = BackendSpec(name="null-backend", description="Starts nothing.", create=lambda request: None)  # type: ignore[arg-type,return-value]

    class Plugin:
        @hookimpl
        def arena_register_backends(self, register):
            register(spec)

    assert ArenaHooks(plugin_manager_with(Plugin())).registry.get("backends", "null-backend") is spec


def test_hook_arena_register_hardware():
    registry = ArenaHooks(plugin_manager_with(builtins=("arena_hardware",))).registry
    assert set(registry.hardware) == {"cpu-host", "gb10", "h100-sxm", "h200", "b200", "rtx-4090", "rtx-5090", "rtx-pro-6000", "mi300x", "m3-ultra", "m4-max"}
    assert registry.hardware["gb10"].item.memory_bandwidth_gbs == 273


def test_hook_arena_register_models():
    registry = ArenaHooks(plugin_manager_with(builtins=("arena_models",))).registry
    assert list(registry.models)[:5] == ["qwen3.6-35b-a3b", "qwen3.5-0.8b", "qwen3.6-27b", "gemma-3-270m", "gemma-3-270m-bf16"]
    assert len(registry.models) == 19  # and the seed cohort's fourteen other checkpoints (arena_models.cohort)


def test_hook_arena_register_scorers():
    spec = ScorerSpec(name="constant", description="Always 50.", profiles=("only",), create=lambda profile: 50)

    class Plugin:
        @hookimpl
        def arena_register_scorers(self, register):
            register(spec)

    assert ArenaHooks(plugin_manager_with(Plugin())).registry.get("scorers", "constant").create("only") == 50


class ConstantPredictor:
    """A third party's predictor: every workload at 42 tok/s, its ledger one line a run."""

    def coverage(self, setup):
        return None

    def basis(self, setup):
        return "a constant, for tests"

    def predict(self, workload, setup):
        figures = Figures(per_user_tps=42.0, total_tps=420.0, ttft_p50_s=0.5, bound="a constant")
        return WorkloadPrediction(workload=workload.name, central=figures, low=figures, high=figures)

    def serve(self, workload, setup):
        return ()

    def calibrate(self, cards, hardware, backend):
        raise UsageError("a constant has nothing to fit")

    def ledger(self, cards, *, only=None, fits=None):
        return [
            LedgerLine(run_id=c.run_id, workload="chat", tier=0, predicted_tps=42.0, measured_tps=40.0, predicted_ttft_s=0.5, measured_ttft_s=0.4)
            for c in cards
            if only in (None, c.run_id)
        ]


def test_hook_arena_register_predictors(tmp_path):
    """A third party's default predictor replaces the built-in one: its figures are what
    ``arena predict`` prints and what a card shows beside the measured ones."""
    import json

    class Plugin:
        @hookimpl
        def arena_register_predictors(self, register):
            register(PredictorSpec(name="constant", description="42 tok/s.", create=lambda registry: ConstantPredictor(), default=True))

    manager = make_plugin_manager(autoload=False, extra_plugins=[("constant-predictor", Plugin())])
    registry = ArenaHooks(manager).registry
    assert list(registry.by_kind["predictors"]) == ["step-simulator", "constant"]
    predicted = run_cli(manager, ["predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--workloads", "chat", "--json", "--output", str(tmp_path)])
    assert predicted.exit_code == 0, predicted.output
    found = json.loads(predicted.output)
    assert found["tier"] == "a constant, for tests" and found["workloads"][0]["central"]["per_user_tps"] == 42.0
    assert run_cli(manager, ["import", "--seeds", "--output", str(tmp_path)]).exit_code == 0
    run_id = next(p.name for p in sorted(tmp_path.iterdir()) if (p / "manifest.json").exists())
    card = run_cli(manager, ["card", run_id, "--output", str(tmp_path), "--format", "json"])
    assert json.loads(card.output)["predictions"][0]["predicted_tps"] == 42.0
    calibrated = run_cli(manager, ["calibrate", "--hardware", "gb10", "--backend", "vllm", "--output", str(tmp_path)])
    assert calibrated.exit_code == 2 and "a constant has nothing to fit" in calibrated.output


@pytest.mark.slow
def test_hook_arena_register_renderers(seed_store, tmp_path):
    """A third party's renderer adds a format to ``arena card`` and to ``arena publish``, reading
    the figures the core computed; with the default site plugin left out, ``arena publish``
    says so in one line."""
    from arena_core import CardView, RendererSpec, SiteView

    def card(view: CardView) -> str:
        return "".join(f"{line.name}\t{line.tokens_per_second}\n" for line in view.card.workloads)

    def site(view: SiteView, directory, progress) -> Path:
        index = directory / "runs.tsv"
        index.write_text("".join(f"{run_id}\t{v.scores['aggregate'].value}\n" for run_id, v in view.views.items()))
        progress(1, 1, index.name)
        return index

    class Plugin:
        @hookimpl
        def arena_register_renderers(self, register):
            register(RendererSpec(name="tsv", description="tab-separated", card=card, site=site))

    manager = make_plugin_manager(autoload=False, extra_plugins=[("tsv-renderer", Plugin())])
    run_id = next(p.name for p in sorted(seed_store.iterdir()) if (p / "manifest.json").exists())
    shown = run_cli(manager, ["card", run_id, "--output", str(seed_store), "--format", "tsv"])
    assert shown.exit_code == 0, shown.output
    stored = json.loads(run_cli(manager, ["card", run_id, "--output", str(seed_store), "--format", "json"]).output)["card"]
    assert shown.output == "".join(f"{line['name']}\t{line['tokens_per_second']}\n" for line in stored["workloads"])
    published = run_cli(manager, ["publish", str(tmp_path / "tsv"), "--output", str(seed_store), "--format", "tsv"])
    assert published.exit_code == 0 and "runs.tsv (17 cards)" in published.output
    assert len((tmp_path / "tsv" / "runs.tsv").read_text().splitlines()) == 17
    without_site = make_plugin_manager(autoload=False, disabled=["arena_site"])
    refused = run_cli(without_site, ["publish", str(tmp_path / "site"), "--output", str(seed_store)])
    assert refused.exit_code == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "--format site: no renderer of sites by that name is registered (ARENA_DISABLED_PLUGINS leaves out arena_site)" in refused.stderr
    unknown = run_cli(manager, ["card", run_id, "--output", str(seed_store), "--format", "pdf"])
    assert unknown.exit_code == 2 and "renderers of cards: text, markdown, json, tsv" in unknown.stderr

    class Broken:
        @hookimpl
        def arena_register_renderers(self, register):
            register(RendererSpec(name="broken", description="raises", card=lambda view: view.card.no_such_field))

    broken = run_cli(
        make_plugin_manager(autoload=False, extra_plugins=[("broken-renderer", Broken())]), ["card", run_id, "--output", str(seed_store), "--format", "broken"]
    )
    said = broken.stderr.strip().splitlines()  # a plugin's fault: exit 3, one line naming it
    assert broken.exit_code == 3 and len(said) == 1, broken.stderr
    assert "plugin 'broken-renderer': renderer 'broken' failed: AttributeError: 'ModelCard' object has no attribute 'no_such_field'" in said[0]


def test_a_renderer_of_predictions_lays_out_arena_predict():
    """``arena predict --format NAME`` offers every renderer with a ``prediction``: a third
    party's reads the same figures as the built-in JSON; ``--json`` is ``--format json``; with
    the built-in renderers left out, one line says so."""
    from arena_core import PredictionView, RendererSpec

    def tsv(view: PredictionView) -> str:
        return "".join(f"{p.workload}\t{p.central.per_user_tps}\n" for p in view.workloads)

    class Plugin:
        @hookimpl
        def arena_register_renderers(self, register):
            register(RendererSpec(name="tsv", description="tab-separated", prediction=tsv))

    manager = make_plugin_manager(autoload=False, extra_plugins=[("tsv-renderer", Plugin())])
    asked = ["predict", "qwen3.6-35b-a3b", "--hardware", "gb10", "--workloads", "chat,rag-8k"]
    shown = run_cli(manager, [*asked, "--format", "tsv"])
    document = json.loads(run_cli(manager, [*asked, "--format", "json"]).output)
    assert json.loads(run_cli(manager, [*asked, "--json"]).output) == document
    assert shown.exit_code == 0 and shown.output == "".join(f"{w['workload']}\t{w['central']['per_user_tps']}\n" for w in document["workloads"])
    unknown = run_cli(manager, [*asked, "--format", "markdown"])
    assert (
        unknown.exit_code == 2
        and "--format markdown: no renderer of predictions by that name is registered; renderers of predictions: text, json, tsv" in unknown.stderr
    )
    without = run_cli(make_plugin_manager(autoload=False, disabled=["arena_renderers"]), asked)
    said = without.stderr.strip().splitlines()
    assert without.exit_code == 2 and len(said) == 1 and "(ARENA_DISABLED_PLUGINS leaves out arena_renderers); renderers of predictions: none" in said[0]


@pytest.mark.slow
def test_hook_arena_register_quality_suites(tmp_path):
    """A third party's quality suite runs in ``arena quality`` beside the built-in ones, and its
    figure is stored in the run and shown on its card."""
    import json

    from arena_core import MeasuredQuality, QualitySuiteSpec
    from arena_core.testing.fake_server import FakeServerProcess

    def run(request):
        assert request.endpoint.base_url and not request.full
        return MeasuredQuality(suite="always-half", benchmark="", metric="share", value=50.0, low=40.0, high=60.0, passed=5, items=10, of_total=10)

    class Plugin:
        @hookimpl
        def arena_register_quality_suites(self, register):
            register(QualitySuiteSpec(name="always-half", description="Half right.", benchmark="", subset_size=10, full_size=10, run=run))

    manager = make_plugin_manager(autoload=False, extra_plugins=[("half-suite", Plugin())])
    assert list(ArenaHooks(manager).registry.by_kind["quality-suites"]) == ["humaneval", "instruction-canary", "tool-calls", "always-half"]
    with FakeServerProcess(["--decode-gap-ms", "0"]) as server:
        measured = run_cli(manager, ["quality", "--base-url", server.url, "--quality-suite", "always-half", "--output", str(tmp_path)])
    assert measured.exit_code == 0, measured.output
    assert "quality, always-half (measured): 50.0 [40.0–60.0]" in measured.stdout
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert json.loads((run_dir / "manifest.json").read_text())["measured_quality"][0]["suite"] == "always-half"
    card = run_cli(manager, ["card", run_dir.name, "--output", str(tmp_path)])
    assert "always-half (measured)" in card.stdout

    class Broken:
        @hookimpl
        def arena_register_quality_suites(self, register):
            register(QualitySuiteSpec(name="broken", description="Raises.", benchmark="", subset_size=1, full_size=1, run=lambda request: 1 / 0))

    manager = make_plugin_manager(autoload=False, extra_plugins=[("half-suite", Plugin()), ("broken-suite", Broken())])
    with FakeServerProcess(["--decode-gap-ms", "0"]) as server:
        both = run_cli(manager, ["quality", "--base-url", server.url, "--quality-suite", "broken", "--quality-suite", "always-half", "--output", str(tmp_path)])
    assert both.exit_code == 0 and "broken could not be measured (ZeroDivisionError" in both.stderr and "always-half (measured): 50.0" in both.stdout


def test_hook_arena_register_commands():
    @click.command("hello")
    def hello() -> None:
        """Say hello."""
        click.echo("hello from a plugin")

    @click.command("list")
    def hijack() -> None:
        click.echo("hijacked")

    class Adds:
        @hookimpl
        def arena_register_commands(self, cli):
            cli.add_command(hello)

    class Clashes:
        @hookimpl
        def arena_register_commands(self, cli):
            cli.add_command(hijack)

    pm = plugin_manager_with(Adds(), Clashes(), builtins=("arena_core.cli.essential_commands", "arena_models"))
    assert run_cli(pm, ["hello"]).stdout == "hello from a plugin\n"
    assert "qwen3.5-0.8b" in run_cli(pm, ["list", "models"]).stdout  # the built-in "list" was kept
    assert {str(problem) for problem in pm.problems} == {"plugin 'Clashes': command 'list' is already taken; skipped"}


def test_hook_arena_detect_hardware():
    box = HardwareProfile(name="box", title="Box", description="A box.", memory_gb=4, unified_memory=False)

    class Recognises:
        @hookimpl
        def arena_detect_hardware(self, config):
            assert isinstance(config, ArenaConfig)
            return HardwareDetection(profile=box, reason="it has a box-shaped sticker")

    class DoesNotRecognise:
        @hookimpl(tryfirst=True)
        def arena_detect_hardware(self):
            return None

    fallback = ArenaHooks(plugin_manager_with(builtins=("arena_hardware",))).detect_hardware(ArenaConfig())
    assert fallback is not None and fallback.profile.name == "cpu-host"
    pm = plugin_manager_with(DoesNotRecognise(), Recognises(), builtins=("arena_hardware",))
    found = ArenaHooks(pm).detect_hardware(ArenaConfig())
    assert found is not None and (found.profile.name, found.reason) == ("box", "it has a box-shaped sticker")
    assert ArenaHooks(plugin_manager_with()).detect_hardware(ArenaConfig()) is None


def test_hook_arena_describe_model():
    from arena_core import DescribedModel, ModelQuery, ModelSpec

    tiny = ModelSpec(name="tiny", title="Tiny", description="described by a box", hf_id="", precision="BF16", params_total_b=0.1)

    class BoxSource:
        @hookimpl
        def arena_describe_model(self, query):
            if not query.source.startswith("box:"):
                return None
            if query.source == "box:broken":
                raise UsageError(f"{query.named_by}: the box is empty")
            return DescribedModel(spec=tiny, assumptions=("a box says little",))

    class Buggy:
        @hookimpl(tryfirst=True)
        def arena_describe_model(self, query):
            raise KeyError("bug")

    pm = plugin_manager_with(Buggy(), BoxSource(), builtins=("arena_models",))
    hooks = ArenaHooks(pm)
    found = hooks.describe_model(ModelQuery(source="box:tiny", named_by="--model-config"))
    assert found is not None and found.spec.name == "tiny" and found.assumptions == ("a box says little",)
    assert [str(p) for p in pm.problems] == ["plugin 'Buggy': arena_describe_model raised KeyError: 'bug'; skipped"]  # the next source was asked
    with pytest.raises(UsageError, match="^--model-config: the box is empty$"):  # the user's error passes through
        hooks.describe_model(ModelQuery(source="box:broken", named_by="--model-config"))
    # the built-in source: a config.json, and nothing for a catalog name to serve
    real = Path(__file__).resolve().parent / "fixtures" / "vllm_real" / "config.json"
    gemma = hooks.describe_model(ModelQuery(source=str(real), named_by="--model-config", precision="FP8"))
    assert gemma is not None and gemma.spec.precision == "FP8" and gemma.architecture_class == "Gemma3ForCausalLM"
    assert hooks.describe_model(ModelQuery(source="gemma-3-270m", named_by="model gemma-3-270m", serve=True)) is None


def test_hook_arena_open_bundle(tmp_path):
    """A third party's reader of its own bundle kind is asked like the built-in one (which
    answers only for gzip files); a reader's bug is reported and the next asked; its refusal
    is the user's error, said as it is."""
    from arena_core import BundleRequest, OpenedBundle, Provenance

    class BoxReader:
        @hookimpl
        def arena_open_bundle(self, request):
            if request.path.suffix != ".box":
                return None
            if request.path.read_text() == "broken":
                raise UsageError(f"bundle {request.path.name}: the box is broken")
            provenance = Provenance(signer="SHA256:" + "A" * 43, figures="checked by the box", made_by="box 1", contents_sha256="0" * 64)
            return OpenedBundle(run_id="20261207-000000-b0c5", run_dir=request.into / "run", provenance=provenance, checked=("box: opened",))

    class Buggy:
        @hookimpl(tryfirst=True)
        def arena_open_bundle(self, request):
            raise KeyError("bug")

    pm = plugin_manager_with(Buggy(), BoxReader(), builtins=("arena_bundles",))
    hooks = ArenaHooks(pm)

    def asked(name: str, text: str):
        (tmp_path / name).write_text(text)
        return hooks.open_bundle(BundleRequest(path=tmp_path / name, into=tmp_path, registry=hooks.registry, card_of=lambda run_dir: "{}"))

    assert asked("run.box", "a run").checked == ("box: opened",)
    assert [str(p) for p in pm.problems] == ["plugin 'Buggy': arena_open_bundle raised KeyError: 'bug'; skipped"]
    with pytest.raises(UsageError, match="^bundle run.box: the box is broken$"):
        asked("run.box", "broken")
    assert asked("result.json", "{}") is None  # not gzip: the built-in reader does not answer, nor does the box's


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    @hookimpl
    def arena_run_started(self, run):
        self.seen.append(("started", run))

    @hookimpl
    def arena_run_finished(self, run, result):
        self.seen.append(("finished", result))


class BrokenObserver:
    @hookimpl(tryfirst=True)
    def arena_run_started(self, run):
        raise ConnectionError("telemetry endpoint down")

    @hookimpl(tryfirst=True)
    def arena_run_finished(self, run, result):
        raise ConnectionError("telemetry endpoint down")


@pytest.fixture
def observers():
    recorder = Recorder()
    pm = plugin_manager_with(recorder, BrokenObserver())
    return recorder, pm


def test_hook_arena_run_started(observers):
    recorder, pm = observers
    ArenaHooks(pm).run_started(RUN)
    assert recorder.seen == [("started", RUN)]
    assert [problem.plugin for problem in pm.problems] == ["BrokenObserver"]


def test_hook_arena_run_finished(observers):
    recorder, pm = observers
    result = RunResult(run_id="r1", completed=False)
    ArenaHooks(pm).run_finished(RUN, result)
    assert recorder.seen == [("finished", result)]
    assert "telemetry endpoint down" in pm.problems[0].problem
