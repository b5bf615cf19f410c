"""`cifar10_finetune`: CIFAR-10 fine-tuning of ConvNeXt, ViT, DeiT, ResNet-50 (the PySpark study).

Models are built from transformers configurations at their published sizes with random weights,
or with ``weights: pretrained`` loaded from a local copy (workloads/pretrained.py), normalized with
the checkpoint's own image statistics where it saved them (preprocessor_config.json).
The 32x32 images stay uint8 on the device; each step scales, normalizes and resizes its batch
to the model's image size (224 for the real models) on the device, inside the timed step, as a
fine-tuning pipeline feeding an ImageNet model does.
"""

from __future__ import annotations

from typing import Any

from devicebench.workloads.base import TaskSpec, Workload

# ImageNet statistics: the normalization these architectures are fine-tuned with.
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
FIT_LOOP = (
    "hand-written loop over transformers image classifiers: shuffled index gather of uint8 "
    "CIFAR-10 images on the device, scale + ImageNet normalization + bilinear resize to the "
    "model's image size inside the step, AdamW, autocast (+ GradScaler for fp16), "
    "channels_last for convolutional models, no per-step sync; torch.compile when compiled"
)

# weights: pretrained loads the checkpoint with this class (images need no tokenizer).
PRETRAINED_CLASS = "AutoModelForImageClassification"
PRETRAINED_TOKENIZER = False

# name -> (transformers family, configuration keywords, native image size).
MODELS: dict[str, tuple[str, dict[str, Any], int]] = {
    "convnext-tiny": (
        "convnext",
        {"depths": [3, 3, 9, 3], "hidden_sizes": [96, 192, 384, 768]},
        224,
    ),
    "convnext-small": (
        "convnext",
        {"depths": [3, 3, 27, 3], "hidden_sizes": [96, 192, 384, 768]},
        224,
    ),
    "convnextv2-nano": (
        "convnextv2",
        {"depths": [2, 2, 8, 2], "hidden_sizes": [80, 160, 320, 640]},
        224,
    ),
    "convnextv2-tiny": (
        "convnextv2",
        {"depths": [3, 3, 9, 3], "hidden_sizes": [96, 192, 384, 768]},
        224,
    ),
    "vit-base-patch16": ("vit", {}, 224),
    "deit-tiny": (
        "vit",
        {"hidden_size": 192, "num_attention_heads": 3, "intermediate_size": 768},
        224,
    ),
    "deit-small": (
        "vit",
        {"hidden_size": 384, "num_attention_heads": 6, "intermediate_size": 1536},
        224,
    ),
    "deit-base": ("vit", {}, 224),
    "deit-base-distilled": ("deit_distilled", {}, 224),
    "resnet-50": ("resnet", {}, 224),
    "vit-tiny": (
        "vit",
        {
            "hidden_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 256,
            "patch_size": 4,
        },
        32,
    ),
}

SPEC = TaskSpec(
    name="cifar10_finetune",
    dataset="cifar10",
    models=tuple(MODELS),
    num_classes=10,
    epochs=3,
    batch_sizes=(64,),
    optimizer="adamw",
    learning_rate=1e-4,
    optimizer_options={"weight_decay": 0.05},
    source="image-classifier fine-tuning on CIFAR-10 resized to 224 (the PySpark/Horovod "
    "fine-tuning study: ConvNeXt, ViT, DeiT, ResNet-50 anchor); AdamW, random weights",
    kind="image_finetune",
    axes={"image_size": ("native",), "compile": ("eager", "compiled")},
)


def patch_size(model: str) -> int | None:
    """The patch side of a ViT/DeiT model (None for convolutional models)."""
    family, kwargs, _ = MODELS[model]
    return int(kwargs.get("patch_size", 16)) if family in ("vit", "deit_distilled") else None


def image_size(model: str, value: Any = "native", source: str | None = None) -> int:
    """The side a cell resizes to: the model's own for `native` (a pretrained checkpoint's
    when `source` names one), else the given number."""
    if value not in (None, "native"):
        return int(value)
    if source is not None:
        from devicebench.frameworks import pretrained

        config = pretrained.model_config(pretrained.locate(model, source))
        return int(config.get("image_size", MODELS[model][2]))
    return MODELS[model][2]


def _source(settings: dict[str, Any], model: str) -> str | None:
    """The pretrained checkpoint of `model` in task or cell settings, None for random weights."""
    if settings.get("weights") != "pretrained":
        return None
    sources = settings["pretrained"]
    return str(sources[model] if isinstance(sources, dict) else sources)


def _check_pretrained_side(model: str, source: str, index: int, value: Any) -> None:
    """A pretrained ViT/DeiT takes only its own image size (its position embeddings fix it)."""
    if patch_size(model) and image_size(model, value, source) != image_size(model, None, source):
        raise ValueError(
            f"image_sizes[{index}]: pretrained {model} ({source}) takes "
            f"{image_size(model, None, source)} px images only (its position embeddings), "
            f"not {value}; use native"
        )


def validate(task_settings: dict[str, Any]) -> None:
    """An image size a ViT/DeiT patch does not divide is an error before any cell runs."""
    models = task_settings.get("models", list(SPEC.models))
    for index, value in enumerate(task_settings.get("image_sizes", [])):
        for model in models:
            source = _source(task_settings, model)
            if source is not None:
                _check_pretrained_side(model, source, index, value)
            side, patch = image_size(model, value, source), patch_size(model)
            if patch and side % patch:
                raise ValueError(
                    f"image_sizes[{index}]: {model} needs an image side divisible by its "
                    f"{patch}-pixel patch, not {side}"
                )
            if side < 32 and not patch:
                raise ValueError(
                    f"image_sizes[{index}]: {side} px is below the 32 px {model} downsamples "
                    "by; use 32 or more"
                )


# Keras cells: keras.applications builds ConvNeXt-T/S and ResNet-50 (keras_port.py);
# the other families have no Keras architecture that can be installed here.
KERAS_MISSING = {
    "convnextv2": "neither keras.applications nor keras-hub 0.32.0 has a ConvNeXt V2 architecture",
    "vit": "ViT",
    "deit_distilled": "DeiT (distilled)",
}


def has_keras_port(model: str) -> bool:
    """Whether the model has a Keras port (keras.applications, parameter parity checked)."""
    from devicebench.workloads.cifar10_finetune.keras_port import APPLICATIONS

    return model in APPLICATIONS


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Keras cells of a model keras.applications lacks are skipped, saying where it is lacking."""
    from devicebench.workloads.base import keras_hub_only, keras_skip_reason

    model = str(settings["model"])
    if settings["framework"] == "torch" or has_keras_port(model):
        return _pretrained_keras_skip(settings)
    family = MODELS[model][0]
    missing = KERAS_MISSING[family]
    if family != "convnextv2":
        missing = keras_hub_only("DeiT" if model.startswith("deit") else missing)
    return keras_skip_reason("cifar10_finetune", settings, missing)


def _pretrained_keras_skip(settings: dict[str, Any]) -> str | None:
    """A transformers checkpoint cannot be loaded into the Keras port: such a cell is skipped."""
    if settings["framework"] != "torch" and settings.get("weights") == "pretrained":
        return (
            f"cifar10_finetune {settings['model']}: weights: pretrained loads transformers "
            "checkpoints, which the Keras port (keras.applications) cannot load; Keras cells "
            "run with random weights only"
        )
    return None


def build_model(
    model: str, seed: int, side: int | None = None, num_labels: int = 10, **overrides: Any
):
    """The classifier at its published size with random weights; forward(pixel_values) -> logits.

    `overrides` replace configuration keys (tests shrink a family to a tiny size with them).
    """
    import torch
    import transformers

    from devicebench.frameworks.transformer_backend import Logits

    family, kwargs, native = MODELS[model]
    side = side or native
    kinds = {
        "convnext": (transformers.ConvNextConfig, transformers.ConvNextForImageClassification),
        "convnextv2": (
            transformers.ConvNextV2Config,
            transformers.ConvNextV2ForImageClassification,
        ),
        "vit": (transformers.ViTConfig, transformers.ViTForImageClassification),
        "deit_distilled": (
            transformers.DeiTConfig,
            transformers.DeiTForImageClassificationWithTeacher,
        ),
        "resnet": (transformers.ResNetConfig, transformers.ResNetForImageClassification),
    }
    config_class, model_class = kinds[family]
    extra: dict[str, Any] = {"num_labels": num_labels}
    if family in ("vit", "deit_distilled"):
        extra["image_size"] = side
    torch.manual_seed(seed)
    return Logits(model_class(config_class(**(kwargs | extra | overrides))))


def is_convolutional(model: str) -> bool:
    return patch_size(model) is None


def normalization(model: str, source: str | None) -> tuple[tuple, tuple]:
    """(mean, std) of a pretrained checkpoint's image processor, ImageNet's otherwise."""
    if source is None:
        return MEAN, STD
    import json

    from devicebench.frameworks import pretrained

    path = pretrained.locate(model, source) / "preprocessor_config.json"
    saved = json.loads(path.read_text()) if path.is_file() else {}
    return tuple(saved.get("image_mean", MEAN)), tuple(saved.get("image_std", STD))


def resize_step(side: int, mean: tuple = MEAN, std: tuple = STD):
    """The on-device batch preparation: uint8 NCHW -> normalized float at `side` x `side`."""
    import torch
    import torch.nn.functional as F

    def prepare(batch: dict[str, Any]) -> dict[str, Any]:
        x = batch.pop("images")
        mean_ = torch.tensor(mean, device=x.device).view(1, 3, 1, 1)
        std_ = torch.tensor(std, device=x.device).view(1, 3, 1, 1)
        x = (x.float() / 255.0 - mean_) / std_
        if x.shape[-1] != side:
            x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
        batch["pixel_values"] = x
        return batch

    return prepare


def make_backend(spec: TaskSpec, settings: dict[str, Any], dataset: Any):
    model = settings["model"]
    source = _source(settings, model)
    side = image_size(model, settings.get("image_size"), source)
    if settings["framework"] != "torch":
        from devicebench.workloads.cifar10_finetune.keras_port import KerasImageBackend

        return KerasImageBackend(spec, settings, dataset, side, MEAN, STD)
    from devicebench.frameworks.transformer_backend import TransformerBackend, weights_builder

    data = {
        "train": {"images": dataset.x_train, "labels": dataset.y_train.astype("int64")},
        "test": {"images": dataset.x_test, "labels": dataset.y_test.astype("int64")},
    }

    classes = int(dataset.num_classes)
    build, weights = weights_builder(
        settings, PRETRAINED_CLASS, classes, lambda seed: build_model(model, seed, side, classes)
    )
    mean, std = normalization(model, source)
    if source is not None:
        weights["normalization"] = {"mean": list(mean), "std": list(std)}
    return TransformerBackend(
        spec,
        settings,
        data,
        build,
        resize_step(side, mean, std),
        FIT_LOOP,
        channels_last=is_convolutional(model) and settings["device"] != "cpu",
        weights=weights,
    )


def flops_per_sample(settings: dict[str, Any], mode: str) -> float:
    """Counted on the CPU at the cell's image size, per image of two (the resize is not counted).

    Two: batch norm in training needs more than one value per channel (ResNet-50 at 32 px ends
    at 1x1)."""
    import torch

    from devicebench.frameworks.transformer_backend import architecture
    from devicebench.measure.flops import count_flops, net_for_counting

    model = str(settings["model"])
    source = _source(settings, model)
    side = image_size(model, settings.get("image_size"), source)
    if source is not None:  # the checkpoint's own architecture
        net = architecture(PRETRAINED_CLASS, model, source, SPEC.num_classes)
    else:
        net = net_for_counting((SPEC.name, model, side), lambda: build_model(model, 0, side))
    return count_flops(net, {"pixel_values": torch.zeros(2, 3, side, side)}, mode)


class Cifar10Finetune(Workload):
    """The registry's handle on this module: its functions are the Workload methods."""

    spec = SPEC
    pretrained_class = PRETRAINED_CLASS
    pretrained_tokenizer = PRETRAINED_TOKENIZER

    validate = staticmethod(validate)
    skip_reason = staticmethod(skip_reason)

    def make_backend(self, settings: dict[str, Any], dataset: Any) -> Any:
        return make_backend(self.spec, settings, dataset)

    flops_per_sample = staticmethod(flops_per_sample)


WORKLOAD = Cifar10Finetune()
