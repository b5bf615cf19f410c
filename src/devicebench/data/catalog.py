"""The dataset catalog: each dataset's files, published checksums, shapes and on-disk format.

What is known of a dataset before anything is prepared; `devicebench.data` prepares and loads.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import cifar10, conll, imdb, jpeg_images, nietzsche


@dataclass(frozen=True)
class FileSpec:
    """One file of a real dataset: its role, its published name, size and SHA-256."""

    role: str  # train_images, train_labels, test_images, test_labels; archive; text
    name: str
    sha256: str  # "" where no published SHA-256 is known (see md5, or pass one)
    size: int
    md5: str = ""  # the publisher's MD5, checked on download when no SHA-256 is known


@dataclass(frozen=True)
class DatasetSpec:
    """What the registry knows about one dataset."""

    name: str
    base_url: str
    files: tuple[FileSpec, ...]
    image_shape: tuple[int, ...]
    num_classes: int
    train_size: int
    test_size: int
    format: str = "idx"  # idx | cifar_bin | aclimdb | text | conll

    def file(self, role: str) -> FileSpec:
        return next(f for f in self.files if f.role == role)


# MNIST (LeCun, Cortes and Burges), the gzip'd IDX files as distributed. Sizes and SHA-256s as
# published in tensorflow/haskell (tensorflow-mnist-input-data/Setup.hs) and
# ankane/torchvision-ruby (lib/torchvision/datasets/mnist.rb, which fetches from the same
# ossci-datasets mirror as torchvision); several other public projects list the same four sums.
MNIST = DatasetSpec(
    name="mnist",
    base_url="https://ossci-datasets.s3.amazonaws.com/mnist/",
    files=(
        FileSpec(
            "train_images",
            "train-images-idx3-ubyte.gz",
            "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
            9_912_422,
        ),
        FileSpec(
            "train_labels",
            "train-labels-idx1-ubyte.gz",
            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
            28_881,
        ),
        FileSpec(
            "test_images",
            "t10k-images-idx3-ubyte.gz",
            "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
            1_648_877,
        ),
        FileSpec(
            "test_labels",
            "t10k-labels-idx1-ubyte.gz",
            "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
            4_542,
        ),
    ),
    image_shape=(28, 28),
    num_classes=10,
    train_size=60_000,
    test_size=10_000,
)

# CIFAR-10 binary version (Krizhevsky). Its publisher lists only an MD5; no SHA-256 of this
# archive was found in public sources, so the download is checked against the MD5 and the
# manifest then pins the file's SHA-256 (as for every file).
CIFAR10 = DatasetSpec(
    name="cifar10",
    base_url="https://www.cs.toronto.edu/~kriz/",
    files=(
        FileSpec(
            "archive",
            "cifar-10-binary.tar.gz",
            "",
            170_052_171,
            md5="c32a1d4ab5d03f1284b67883e8d87530",
        ),
    ),
    image_shape=cifar10.SHAPE,
    num_classes=10,
    train_size=50_000,
    test_size=10_000,
    format="cifar_bin",
)
# Large Movie Review Dataset v1.0 (Maas et al. 2011), the text archive; SHA-256 as published in
# several public projects (e.g. Julia's MLDatasets registration and Go/Rust dataset crates).
IMDB = DatasetSpec(
    name="imdb",
    base_url="https://ai.stanford.edu/~amaas/data/sentiment/",
    files=(
        FileSpec(
            "archive",
            "aclImdb_v1.tar.gz",
            "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe",
            84_125_825,
        ),
    ),
    image_shape=(imdb.STORED_LEN,),
    num_classes=2,
    train_size=25_000,
    test_size=25_000,
    format="aclimdb",
)
# The Nietzsche text of the Keras example. No published checksum exists: the download needs the
# user's SHA-256 (datasets.nietzsche.sha256 in the config, or --sha256 to prepare_data.py).
NIETZSCHE = DatasetSpec(
    name="nietzsche",
    base_url="https://s3.amazonaws.com/text-datasets/",
    files=(FileSpec("text", "nietzsche.txt", "", 600_901),),
    image_shape=(nietzsche.MAXLEN,),
    num_classes=len(nietzsche.ALPHABET),
    train_size=180_000,  # about 200,000 windows in all; the loader checks the exact count
    test_size=20_000,
    format="text",
)

# CoNLL-2003 English NER (Tjong Kim Sang and De Meulder 2003): Reuters-derived, so no public
# mirror with a checksum exists; the real files come from the user's copy (source path, pinned by
# SHA-256 when copied; pass datasets.conll2003.sha256 to check them against known sums).
CONLL2003 = DatasetSpec(
    name="conll2003",
    base_url="",
    files=tuple(FileSpec(split, conll.FILE_NAMES[split][0], "", 0) for split in conll.SPLITS),
    image_shape=(),
    num_classes=len(conll.LABELS),
    train_size=conll.SIZES["train"],
    test_size=conll.SIZES[conll.TEST_SPLIT],
    format="conll",
)

# JPEG images for the serving study: synthetic by default; real images as a zip of JPEGs in the
# same layout (source `path`, with the user's SHA-256). Nothing to download.
JPEG_IMAGES = DatasetSpec(
    name="jpeg_images",
    base_url="",
    files=(FileSpec("archive", "jpeg_images.zip", "", 0),),
    image_shape=(jpeg_images.SIZE, jpeg_images.SIZE, 3),
    num_classes=jpeg_images.NUM_CLASSES,
    train_size=64,  # a serve cell uses only the test split: the study's 1,000 images
    test_size=1_000,
    format="jpeg_zip",
)

# Fashion-MNIST (Xiao, Rasul and Vollgraf 2017, Zalando Research): MNIST's format and shapes, ten
# clothing classes. Read from a local copy (source `path`), e.g. what Debian's
# dataset-fashion-mnist package installs under /usr/share/datasets/fashion-mnist; the SHA-256s
# below are of that package's four files (0.0~git20200523.55506a9-1), which are recompressed
# (each .gz differs from Zalando's by a few header bytes), so a copy of Zalando's own files needs
# its sums passed (datasets.fashion_mnist.sha256).
FASHION_MNIST = DatasetSpec(
    name="fashion_mnist",
    base_url="",
    files=(
        FileSpec(
            "train_images",
            "train-images-idx3-ubyte.gz",
            "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
            26_421_856,
        ),
        FileSpec(
            "train_labels",
            "train-labels-idx1-ubyte.gz",
            "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
            29_491,
        ),
        FileSpec(
            "test_images",
            "t10k-images-idx3-ubyte.gz",
            "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
            4_422_079,
        ),
        FileSpec(
            "test_labels",
            "t10k-labels-idx1-ubyte.gz",
            "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
            5_125,
        ),
    ),
    image_shape=(28, 28),
    num_classes=10,
    train_size=60_000,
    test_size=10_000,
)

DATASETS: dict[str, DatasetSpec] = {
    d.name: d for d in (MNIST, CIFAR10, IMDB, NIETZSCHE, CONLL2003, JPEG_IMAGES, FASHION_MNIST)
}
