"""The paper's result figures, one module each: a grid over the sweep API, the figure's
table, and the paper's claims beside ours (``common.FigureRun``)."""

# Each figure's module, in the order ``nunasim reproduce all`` runs them.
FIGURES = {
    "fig10": "nunasim.experiments.figures.fig10",
    "fig11": "nunasim.experiments.figures.fig11",
    "fig12": "nunasim.experiments.figures.fig12",
    "fig13": "nunasim.experiments.figures.fig13",
    "fig14": "nunasim.experiments.figures.fig14",
    "fig9": "nunasim.experiments.figures.fig9",
    "fig15": "nunasim.experiments.figures.fig15",
    "fig2": "nunasim.experiments.figures.fig2",
}
