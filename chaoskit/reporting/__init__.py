"""Reports of a run: Allure attachments, plots and the static HTML summary."""
