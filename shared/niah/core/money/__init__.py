"""Money: what calls cost, what a run will cost before it runs, and spend windows."""
