/// Placeholder: the Locify domain lives here.
enum LocifyPlaceholder {}
