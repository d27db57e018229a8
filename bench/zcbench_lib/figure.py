"""What every zcbench figure does before and after it draws: pyplot on a
backend that needs no display, and saving a finished figure as a PNG."""

import os


def pyplot():
    """matplotlib.pyplot on the Agg backend; ImportError when matplotlib is
    missing (the callers say so and write no PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, out_dir, name, dpi=80):
    """Lay fig out, write it to out_dir/name, free it; returns the path."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
