#ifndef LOCIFY_CLIBSSL_SHIM_H
#define LOCIFY_CLIBSSL_SHIM_H

/* libssl for the Google client's TLS (FirebaseAdmin's SocketHTTPTransport). As in CLibCrypto,
   only the OpenSSL 3 API is in scope. */
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

/* The calls below are macros over SSL_ctrl / SSL_CTX_ctrl / BIO_ctrl, which Swift cannot see. */

/* Sends the server name indication (SNI) for `name`. Returns 1 on success. */
static inline int locify_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/* Refuses protocol versions below `version` (e.g. TLS1_2_VERSION). Returns 1 on success. */
static inline int locify_SSL_CTX_set_min_proto_version(SSL_CTX *context, int version) {
    return (int)SSL_CTX_set_min_proto_version(context, version);
}

/* What a memory BIO returns when empty: -1 (retry) while the socket is open, 0 after its end. */
static inline void locify_BIO_set_mem_eof_return(BIO *bio, int value) {
    (void)BIO_set_mem_eof_return(bio, value);
}

#endif
