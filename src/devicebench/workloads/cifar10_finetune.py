"""`cifar10_finetune`: CIFAR-10 fine-tuning of ConvNeXt, ViT, DeiT, ResNet-50 (the PySpark study).

Models are built from transformers configurations at their published sizes with random weights.
The 32x32 images stay uint8 on the device; each step scales, normalizes and resizes its batch
to the model's image size (224 for the real models) on the device, inside the timed step, as a
fine-tuning pipeline feeding an ImageNet model does.
"""

from __future__ import annotations

from typing import Any

from devicebench.tasks import TaskSpec

# ImageNet statistics: the normalization these architectures are fine-tuned with.
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
FIT_LOOP = (
    "hand-written loop over transformers image classifiers: shuffled index gather of uint8 "
    "CIFAR-10 images on the device, scale + ImageNet normalization + bilinear resize to the "
    "model's image size inside the step, AdamW, autocast (+ GradScaler for fp16), "
    "channels_last for convolutional models, no per-step sync; torch.compile when compiled"
)

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


def image_size(model: str, value: Any = "native") -> int:
    """The side a cell resizes to: the model's own for `native`, else the given number."""
    return MODELS[model][2] if value in (None, "native") else int(value)


def validate(task_settings: dict[str, Any]) -> None:
    """An image size a ViT/DeiT patch does not divide is an error before any cell runs."""
    models = task_settings.get("models", list(SPEC.models))
    for index, value in enumerate(task_settings.get("image_sizes", [])):
        for model in models:
            side, patch = image_size(model, value), patch_size(model)
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


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Keras cells are recorded skipped: this workload runs through transformers (torch) only."""
    if settings["framework"] != "torch":
        return (
            f"cifar10_finetune {settings['model']} runs on torch (transformers) only: no Keras "
            "port with parameter parity is built for it"
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

    from devicebench.workloads.transformer_backend import Logits

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


def resize_step(side: int):
    """The on-device batch preparation: uint8 NCHW -> normalized float at `side` x `side`."""
    import torch
    import torch.nn.functional as F

    def prepare(batch: dict[str, Any]) -> dict[str, Any]:
        x = batch.pop("images")
        mean = torch.tensor(MEAN, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(STD, device=x.device).view(1, 3, 1, 1)
        x = (x.float() / 255.0 - mean) / std
        if x.shape[-1] != side:
            x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
        batch["pixel_values"] = x
        return batch

    return prepare


def make_backend(spec: TaskSpec, settings: dict[str, Any], dataset: Any):
    from devicebench.workloads.transformer_backend import TransformerBackend

    model = settings["model"]
    side = image_size(model, settings.get("image_size"))
    data = {
        "train": {"images": dataset.x_train, "labels": dataset.y_train.astype("int64")},
        "test": {"images": dataset.x_test, "labels": dataset.y_test.astype("int64")},
    }

    def build(seed: int):
        return build_model(model, seed, side, int(dataset.num_classes))

    return TransformerBackend(
        spec,
        settings,
        data,
        build,
        resize_step(side),
        FIT_LOOP,
        channels_last=is_convolutional(model) and settings["device"] != "cpu",
    )


def flops_per_sample(settings: dict[str, Any], mode: str) -> float:
    """Counted on the CPU over one image at the cell's image size (the resize is not counted)."""
    import torch

    from devicebench.workloads.transformer_backend import count_flops

    model = str(settings["model"])
    side = image_size(model, settings.get("image_size"))
    net = build_model(model, 0, side)
    return count_flops(net, {"pixel_values": torch.zeros(1, 3, side, side)}, mode)
