/* The ephemeral key and certificate of one migration's criu page server
 * connection (criu --tls): see tern_mchan_ephemeral_cert in
 * migrate-channel.h. Kept apart from the channel itself, which needs no
 * certificate. */
#include "migrate-channel.h"
#include "utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* The name goes into an X509V3 config string ("IP:..." / "DNS:..."), so
 * only characters of addresses and host names are allowed. */
static bool valid_common_name(const char *cn)
{
	if (cn == NULL || *cn == '\0' || strlen(cn) > 64)
		return false;
	for (const char *p = cn; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == ':'))
			return false;
	return true;
}

static bool add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
	bool ok = ext && X509_add_ext(x, ext, -1);

	X509_EXTENSION_free(ext);
	return ok;
}

/* A P-256 key and a self-signed v3 certificate. criu (GnuTLS) loads the
 * peer's certificate as its only trust anchor (--tls-cacert), so the
 * certificate is its own CA: CA:TRUE and keyCertSign, plus
 * digitalSignature for the TLS handshake itself. The subjectAltName lets
 * criu's host check (without --tls-no-cn-verify) match an IP address,
 * which GnuTLS looks for only there, never in the CN. */
static X509 *make_cert(EVP_PKEY *key, const char *cn)
{
	unsigned char serial[16];
	unsigned char addr[16];
	char san[80];
	BIGNUM *bn = NULL;
	X509V3_CTX v3;
	X509 *x = X509_new();
	X509_NAME *name;
	bool is_ip = inet_pton(AF_INET, cn, addr) == 1 || inet_pton(AF_INET6, cn, addr) == 1;

	if (x == NULL || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f; /* a positive serial */
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	if (bn == NULL || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL)
		goto fail;
	/* an hour back: the two nodes' clocks need not agree exactly */
	if (!X509_set_version(x, X509_VERSION_3) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600) || !X509_set_pubkey(x, key))
		goto fail;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
					-1, 0) ||
	    !X509_set_issuer_name(x, name))
		goto fail;
	snprintf(san, sizeof(san), "%s:%s", is_ip ? "IP" : "DNS", cn);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	if (!add_ext(x, &v3, NID_basic_constraints, "critical,CA:TRUE") ||
	    !add_ext(x, &v3, NID_key_usage, "critical,digitalSignature,keyCertSign") ||
	    !add_ext(x, &v3, NID_subject_key_identifier, "hash") ||
	    !add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") ||
	    !add_ext(x, &v3, NID_subject_alt_name, san))
		goto fail;
	if (X509_sign(x, key, EVP_sha256()) <= 0)
		goto fail;
	BN_free(bn);
	return x;
fail:
	BN_free(bn);
	X509_free(x);
	return NULL;
}

/* Write the PEM in `bio` to dirfd/name with mode 0600. */
static int write_pem(int dirfd, const char *dir, const char *name, BIO *bio, tern_error **err)
{
	cleanup_close int fd = -1;
	char *data = NULL;
	long len = BIO_get_mem_data(bio, &data);
	int ret;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return tern_error_make(err, errno, "creating `%s/%s`", dir, name);
	/* an older file of that name may have had a wider mode */
	if (fchmod(fd, 0600) < 0)
		return tern_error_make(err, errno, "chmod 0600 `%s/%s`", dir, name);
	ret = tern_write_all(fd, data, len > 0 ? (size_t)len : 0);
	if (ret < 0)
		return tern_error_make(err, -ret, "writing `%s/%s`", dir, name);
	return 0;
}

int tern_mchan_ephemeral_cert(const char *dir, const char *common_name, char **cert_pem,
			      tern_error **err)
{
	cleanup_close int dirfd = -1;
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	BIO *key_bio = NULL, *cert_bio = NULL;
	char *data = NULL;
	long len;
	int ret;

	if (!valid_common_name(common_name))
		return tern_error_make_quiet(err, EINVAL,
					     "certificate name `%s`: expected an IP address or a "
					     "host name",
					     common_name ? common_name : "(null)");
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return tern_error_make(err, errno, "directory `%s` for the criu certificate", dir);
	key = EVP_EC_gen("P-256");
	x = key ? make_cert(key, common_name) : NULL;
	/* secmem: the private key's PEM is cleared when the BIO goes */
	key_bio = BIO_new(BIO_s_secmem());
	cert_bio = BIO_new(BIO_s_mem());
	if (x == NULL || key_bio == NULL || cert_bio == NULL ||
	    !PEM_write_bio_PrivateKey(key_bio, key, NULL, NULL, 0, NULL, NULL) ||
	    !PEM_write_bio_X509(cert_bio, x)) {
		ret =
		    tern_error_make_quiet(err, EINVAL, "making a certificate for `%s` for criu: %s",
					  common_name, tern_mchan_openssl_reason());
		goto out;
	}
	ret = write_pem(dirfd, dir, "key.pem", key_bio, err);
	if (ret == 0)
		ret = write_pem(dirfd, dir, "cert.pem", cert_bio, err);
	if (ret == 0 && cert_pem) {
		len = BIO_get_mem_data(cert_bio, &data);
		*cert_pem = tern_xmalloc0((size_t)len + 1);
		memcpy(*cert_pem, data, (size_t)len);
	}
out:
	BIO_free(key_bio);
	BIO_free(cert_bio);
	X509_free(x);
	EVP_PKEY_free(key);
	return ret;
}
