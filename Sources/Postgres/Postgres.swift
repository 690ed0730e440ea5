internal import CLibPQ

/// Placeholder: the libpq wrapper lives here.
enum PostgresPlaceholder {}
