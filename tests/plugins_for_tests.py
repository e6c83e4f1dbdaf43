"""Plugins that misbehave on purpose, one way each, for the plugin-manager tests."""

from __future__ import annotations

from arena_core import HardwareDetection, HardwareProfile, ModelSpec, hookimpl

TEST_BOX = HardwareProfile(name="test-box", title="Test box", description="A box only tests know.", memory_gb=8, unified_memory=False)


def model(name: str) -> ModelSpec:
    return ModelSpec(name=name, title=name, description=f"model {name}", hf_id=f"org/{name}", precision="bf16")


class GoodModels:
    @hookimpl
    def arena_register_models(self, register):
        register(model("good-model"))


class UnknownArgument:
    @hookimpl
    def arena_register_models(self, register, colour):
        register(model("never"))


class MisspelledHook:
    @hookimpl
    def arena_register_model(self, register):  # missing the final "s"
        register(model("never"))


class DuplicateModel:
    @hookimpl
    def arena_register_models(self, register):
        register(model("good-model"))
        register(model("own-model"))


class RaisesInHook:
    @hookimpl
    def arena_register_models(self, register):
        register(model("half-way"))
        raise RuntimeError("catalog file is corrupt")


class WrongType:
    @hookimpl
    def arena_register_models(self, register):
        register({"name": "dict-model"})


class DetectsTestBox:
    @hookimpl
    def arena_detect_hardware(self):
        return HardwareDetection(profile=TEST_BOX, reason="tests said so")


class DetectorRaises:
    @hookimpl(tryfirst=True)
    def arena_detect_hardware(self):
        raise OSError("nvidia-smi exploded")


def fake_distribution(root, name: str, version: str, entry_points: dict[str, str], modules: dict[str, str] | None = None) -> None:
    """An installed distribution as pip leaves it (metadata and an ``arena`` entry point) under
    ``root``, plus the modules it names, so entry-point loading is tested without pip."""
    dist_info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (dist_info / "entry_points.txt").write_text(f"[arena]\n{lines}")
    for module, source in (modules or {}).items():
        (root / f"{module}.py").write_text(source)
