"""`cifar10_finetune`: CIFAR-10 fine-tuning of ConvNeXt, ViT, DeiT and ResNet-50 (the PySpark study).

Models are built from transformers configurations at their published sizes with random weights.
The 32x32 images stay uint8 on the device; each step scales, normalizes and resizes its batch
to the model's image size (224 for the real models) on the device, inside the timed step, as a
fine-tuning pipeline feeding an ImageNet model does.
"""

from __future__ import annotations

from typing import Any

from devicebench.tasks import TaskSpec

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
