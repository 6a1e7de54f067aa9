#ifndef WSLOAD_COPENSSL_SHIM_H
#define WSLOAD_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// OpenSSL exposes these as macros, which Swift does not import.

static inline long wsload_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline int wsload_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int wsload_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline long wsload_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }

static inline long wsload_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

static inline uint64_t wsload_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t wsload_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }

static inline size_t wsload_BIO_pending(BIO *bio) { return (size_t)BIO_pending(bio); }

static inline long wsload_BIO_set_mem_eof_return(BIO *bio, long value) {
    return BIO_set_mem_eof_return(bio, value);
}

static inline int wsload_SSL_set_app_data(SSL *ssl, void *data) { return SSL_set_app_data(ssl, data); }
static inline void *wsload_SSL_get_app_data(const SSL *ssl) { return SSL_get_app_data(ssl); }

static inline int wsload_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
static inline int wsload_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }

#endif
