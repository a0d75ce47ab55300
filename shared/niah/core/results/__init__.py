"""Results: scores, intervals, paired tests, comparisons, curves and the rows a run exports."""
