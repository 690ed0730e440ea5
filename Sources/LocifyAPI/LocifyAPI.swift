/// Placeholder: the HTTP face of Locify lives here.
enum LocifyAPIPlaceholder {}
