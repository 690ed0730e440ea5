/// Placeholder: shared test helpers.
enum TestSupportPlaceholder {}
