"""The NIAH logic, no Google client and no cloud adapter, by concern.

``interfaces`` (the ports to the outside), ``request`` (the run request and its grid),
``prompts`` (haystacks, needles, the prompt builder), ``results`` (scores, intervals,
comparisons), ``pages`` (templates and what fills them), ``money`` (prices, estimates,
spend).
"""
