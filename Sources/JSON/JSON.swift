/// Placeholder: strict JSON parser and fast writer.
enum JSONPlaceholder {}
