"""Results: what stored runs say. Model cards built from run folders, findings, the leaderboard's
ranking, imported cards and reference-tool files, and the default predictor as cards and the site
reach it."""
