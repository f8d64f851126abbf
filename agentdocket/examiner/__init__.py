"""The examiner harness: an examiner model converses with the agent under test from a case's
task description, recorded through the tracer, and each case's ``eval_code`` runs in a
subprocess to score its points (after "How to evaluate a LLM agent?", TaskWeaver's method)."""
