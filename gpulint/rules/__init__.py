"""One module per rule, named after the anti-pattern. Discovered by gpulint.rule.all_rules()."""
