"""``python -m torchlight``: versions of the installed torchlight distributions and each backend's status."""

import platform
import sys
from importlib.metadata import PackageNotFoundError, distributions, version

from torchlight.tensor.backend.registry import backend_status, get_default_device

__all__ = ["main"]


def _distributions():
    names = set()
    for dist in distributions():
        name = (dist.metadata.get("Name") or "").lower()
        if name == "torchlight" or name.startswith("torchlight-") or name.startswith("torchlight_"):
            names.add(name)
    return sorted(names)


def main() -> int:
    print(f"torchlight on Python {platform.python_version()} ({sys.platform})")
    print("\ninstalled distributions:")
    for name in _distributions():
        try:
            print(f"  {name:32s} {version(name)}")
        except PackageNotFoundError:  # pragma: no cover - raced uninstall
            pass
    print(
        f"\ndefault device: {get_default_device()!r} (set_default_device(...) or $TORCHLIGHT_DEVICE)"
    )
    print("\nbackends (entry-point group 'torchlight.backends'):")
    for name, status, reason in backend_status():
        print(f"  {name:10s} {status:12s} {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
