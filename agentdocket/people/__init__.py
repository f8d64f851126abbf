"""People in the loop: labels, rubrics, annotation queues, agreement."""
