"""The module inspect_ai loads through its `inspect_ai` entry point: it registers the tasks."""

from labreplay.suites.inspect_tasks.campaign import campaign
from labreplay.suites.inspect_tasks.conditions import conditions

__all__ = ["campaign", "conditions"]
