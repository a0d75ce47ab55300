"""A finished run's report in Cloud Storage: the page, the pictures, the claim."""
