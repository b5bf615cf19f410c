"""`serve_image`: five image classifiers behind the scoring server, scoring JPEG images.

The cloud deployment study: MobileNetV2, NASNetMobile, ResNet50, ResNet152 and NASNetLarge behind
an HTTP scoring API, 20-50 concurrent clients scoring 1,000 JPEG images. The server, clients,
LoadGen and the record are devicebench.serving's; the request bodies are the jpeg_images
dataset's files (the data registry's loader).
"""

from __future__ import annotations

from devicebench.workloads.base import SERVE_AXES, ServeWorkload, TaskSpec

MODELS = ("mobilenetv2", "nasnetmobile", "resnet50", "resnet152", "nasnetlarge")


class ServeImage(ServeWorkload):
    spec = TaskSpec(
        name="serve_image",
        dataset="jpeg_images",
        models=MODELS,
        num_classes=1000,
        epochs=1,  # unused: a serve cell does not train
        batch_sizes=(8,),
        optimizer="none",
        learning_rate=1.0,
        source="cloud deployment study: the five models behind an HTTP scoring API, "
        "20-50 concurrent clients scoring 1,000 JPEG images; batch_size is the server's "
        "largest dynamic batch",
        kind="serve",
        axes=dict(SERVE_AXES),
        modes=("serve",),
    )
    content_type = "image/jpeg"
    client_content_type = "image/jpeg"


WORKLOAD = ServeImage()
