internal import CLibCrypto

/// Placeholder: ID-token verification and Google admin calls live here.
enum FirebaseAdminPlaceholder {}
