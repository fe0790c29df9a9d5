"""Model loading: one set of weights per variant, LRU of two, clear load errors."""

import json

import pytest
import torch

import prompts
import samv2_handler
from errors import ModelLoadError


def test_variants_and_hub_ids(monkeypatch):
    assert set(samv2_handler.HUB_IDS) == set(prompts.VARIANTS)
    monkeypatch.delenv("SAM2_MODEL")
    assert samv2_handler.model_source("base_plus") == "facebook/sam2.1-hiera-base-plus"
    monkeypatch.setenv("SAM2_MODEL", "/models/mine")
    assert {samv2_handler.model_source(v) for v in prompts.VARIANTS} == {"/models/mine"}


def test_image_and_video_models_share_parameter_tensors(models):
    video = dict(models.video_model.named_parameters())
    image = dict(models.image_model.named_parameters())
    assert len(image) > 100 and set(image) <= set(video)
    for name, param in image.items():
        assert param is video[name]
        assert param.data_ptr() == video[name].data_ptr()
    # the image model must still be a working Sam2Model on the shared tensors
    assert type(models.image_model).__name__ == "Sam2Model"
    assert type(models.video_model).__name__ == "Sam2VideoModel"
    assert models.device == torch.device("cpu") and not models.video_model.training


def test_move_keeps_parameters_shared(micro_checkpoint):
    models = samv2_handler.load_models("tiny")
    models.to("meta")  # a device move without a GPU: every shared Parameter follows the video model
    video = dict(models.video_model.named_parameters())
    for name, param in models.image_model.named_parameters():
        assert param.device.type == "meta" and param is video[name]


def test_lru_keeps_at_most_two_variants():
    loads = []

    def loader(variant):
        loads.append(variant)
        return object()

    registry = samv2_handler.ModelRegistry(capacity=2, loader=loader)
    tiny = registry.get("tiny")
    registry.get("small")
    assert registry.get("tiny") is tiny  # hit, and now most recently used
    registry.get("large")  # evicts "small", the least recently used
    assert registry.loaded() == ["tiny", "large"]
    registry.get("small")
    assert loads == ["tiny", "small", "large", "small"]
    assert registry.loaded() == ["large", "small"]


def test_missing_directory_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("SAM2_MODEL", str(tmp_path / "nowhere"))
    with pytest.raises(ModelLoadError) as error:
        samv2_handler.load_models("tiny")
    message = str(error.value)
    assert "nowhere" in message and "SAM2_MODEL" in message and "Traceback" not in message


def test_broken_directory_is_a_clear_error(monkeypatch, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "sam2_video", "image_size": "big"}))
    monkeypatch.setenv("SAM2_MODEL", str(tmp_path))
    with pytest.raises(ModelLoadError, match=f"from '{tmp_path}'.*SAM2_MODEL"):
        samv2_handler.load_models("small")


def test_unreachable_hub_id_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("SAM2_MODEL", "nobody/no-such-sam2")  # HF_HUB_OFFLINE=1 in the tests
    with pytest.raises(ModelLoadError, match="'nobody/no-such-sam2'.*Set SAM2_MODEL"):
        samv2_handler.load_models("large")
