"""ascend-tune: tiling auto-tuner for Huawei Ascend NPUs."""

__version__ = "0.1.0"
