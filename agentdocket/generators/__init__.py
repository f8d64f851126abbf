"""Generating datasets of cases: GRAMMAR-Gen's grounded, single-answer cases from a relational
database (after "GRAMMAR: Grounded and Modular Methodology for Assessment of Closed-Domain
Retrieval-Augmented Language Models")."""
