"""The Grafana dashboards: panels.py (the SQL), build.py (the JSON), json/, provisioning/."""
