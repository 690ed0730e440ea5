#ifndef LOCIFY_CLIBCRYPTO_SHIM_H
#define LOCIFY_CLIBCRYPTO_SHIM_H

/* Only the OpenSSL 3 EVP API is in scope: deprecated low-level RSA calls do not compile. */
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#endif
