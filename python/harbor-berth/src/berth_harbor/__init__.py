"""harbor environments on berth: ``harbor run -e berth_harbor:BerthEnvironment --ek backend=docker|k8s|modal``."""

from .environment import BerthEnvironment

__all__ = ["BerthEnvironment"]
