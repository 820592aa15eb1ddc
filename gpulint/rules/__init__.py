"""One module per rule, named after the anti-pattern. (A rule may be a package.) Discovered by gpulint.registry.all_rules()."""
