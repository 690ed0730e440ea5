/// Placeholder: the hand-rolled HTTP/1.1 server lives here.
enum HTTPServerPlaceholder {}
