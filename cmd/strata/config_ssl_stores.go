package main

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// The key and trust stores of ssl.keystore.type and ssl.truststore.type:
// JKS (keystore-go), PKCS12 (go-pkcs12) and PEM, as Kafka's
// DefaultSslEngineFactory reads them.

// storeTypes are the store types read from a file.
var storeTypes = map[string]bool{"JKS": true, "PKCS12": true, "PEM": true}

func unknownStoreType(typ string) error {
	return fmt.Errorf("unknown store type %s; one of JKS, PKCS12, PEM", typ)
}

// jksMagic opens a JKS file.
const jksMagic = 0xFEEDFEED

// fileFormat is the format of a JKS or PKCS12 store's file: Java's JKS and
// PKCS12 key stores each read the other's files (keystore.type.compat), so
// a PKCS12 file under the default type JKS loads in Kafka, and here.
func fileFormat(typ string, data []byte) string {
	typ = strings.ToUpper(typ)
	if typ != "JKS" && typ != "PKCS12" {
		return typ
	}
	if len(data) >= 4 && binary.BigEndian.Uint32(data) == jksMagic {
		return "JKS"
	}
	return "PKCS12"
}

// fileKeyStore reads the private key entries of a JKS or PKCS12 key store.
func fileKeyStore(typ string, data []byte, password, keyPassword string) ([]tls.Certificate, error) {
	switch fileFormat(typ, data) {
	case "PKCS12":
		key, cert, chain, err := pkcs12.DecodeChain(data, password)
		if err != nil {
			return nil, err
		}
		c := tls.Certificate{PrivateKey: key, Leaf: cert, Certificate: [][]byte{cert.Raw}}
		for _, ca := range chain {
			c.Certificate = append(c.Certificate, ca.Raw)
		}
		return []tls.Certificate{c}, nil
	case "JKS":
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
			return nil, err
		}
		var out []tls.Certificate
		aliases := ks.Aliases()
		slices.Sort(aliases)
		for _, alias := range aliases {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
			if err != nil {
				return nil, fmt.Errorf("key %s: %w", alias, err)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				return nil, fmt.Errorf("key %s: %w", alias, err)
			}
			c := tls.Certificate{PrivateKey: key}
			for _, cert := range e.CertificateChain {
				c.Certificate = append(c.Certificate, cert.Content)
			}
			if len(c.Certificate) == 0 {
				return nil, fmt.Errorf("key %s has no certificate", alias)
			}
			out = append(out, c)
		}
		if len(out) == 0 {
			return nil, errors.New("no private key entry")
		}
		return out, nil
	}
	return nil, unknownStoreType(typ)
}

// fileTrustStore reads the certificates of a trust store. A JKS store
// without a password is read without its integrity check, as Java does.
func fileTrustStore(typ string, data []byte, password string) ([]*x509.Certificate, error) {
	switch fileFormat(typ, data) {
	case "PEM":
		return pemCertificates(string(data))
	case "PKCS12":
		return pkcs12.DecodeTrustStore(data, password)
	case "JKS":
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil && (password != "" || len(ks.Aliases()) == 0) {
			return nil, err
		}
		var out []*x509.Certificate
		for _, alias := range ks.Aliases() {
			var der [][]byte
			if e, err := ks.GetTrustedCertificateEntry(alias); err == nil {
				der = append(der, e.Certificate.Content)
			} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil {
				for _, c := range chain {
					der = append(der, c.Content)
				}
			}
			for _, d := range der {
				c, err := x509.ParseCertificate(d)
				if err != nil {
					return nil, fmt.Errorf("certificate %s: %w", alias, err)
				}
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("no certificate")
		}
		return out, nil
	}
	return nil, unknownStoreType(typ)
}

// pemEntry matches an entry of a PEM value as Kafka's PemParser: headers
// allowed, base64 across lines or spaces (a value continued over lines in
// a properties file has no newline). The BEGIN and END lines match lazily,
// so several entries on one line are each found.
func pemEntry(name string) *regexp.Regexp {
	n := strings.ReplaceAll(name, " ", `\s+`)
	return regexp.MustCompile(`-+BEGIN\s*(.*?)` + n + `[^-]*-+\s+(?:\s*[^\r\n]*:[^\r\n]*[\r\n]+)*([a-zA-Z0-9/+=\s]*)-+END\s*.*?` + n + `[^-]*-+`)
}

var (
	pemPrivateKey  = pemEntry("PRIVATE KEY")
	pemCertificate = pemEntry("CERTIFICATE")
)

// pemEntries are the DER bytes of each entry, and whether its BEGIN line
// says ENCRYPTED.
func pemEntries(re *regexp.Regexp, v string) (ders [][]byte, encrypted []bool, err error) {
	for _, m := range re.FindAllStringSubmatch(v, -1) {
		der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(m[2]), ""))
		if err != nil {
			return nil, nil, fmt.Errorf("bad base64: %w", err)
		}
		ders = append(ders, der)
		encrypted = append(encrypted, strings.Contains(m[1], "ENCRYPTED"))
	}
	return ders, encrypted, nil
}

// pemCertificates are a PEM value's certificates, at least one.
func pemCertificates(v string) ([]*x509.Certificate, error) {
	ders, _, err := pemEntries(pemCertificate, v)
	if err != nil {
		return nil, err
	}
	if len(ders) == 0 {
		return nil, errors.New("At least one certificate expected, but none found")
	}
	var out []*x509.Certificate
	for _, d := range ders {
		c, err := x509.ParseCertificate(d)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// pemKeyPair is the private key of keyPEM with the chain of chainPEM. The
// key is PKCS#8, encrypted when a key password is given, as Kafka's
// PemStore requires.
func pemKeyPair(keyPEM, chainPEM, keyPassword string, hasKeyPassword bool) (tls.Certificate, error) {
	certs, err := pemCertificates(chainPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	ders, encrypted, err := pemEntries(pemPrivateKey, keyPEM)
	switch {
	case err != nil:
		return tls.Certificate{}, err
	case len(ders) == 0:
		return tls.Certificate{}, errors.New("Private key not provided")
	case len(ders) != 1:
		return tls.Certificate{}, fmt.Errorf("Expected one private key, but found %d", len(ders))
	case hasKeyPassword != encrypted[0] && hasKeyPassword:
		return tls.Certificate{}, errors.New("ssl.key.password is set but the private key is not an ENCRYPTED PRIVATE KEY")
	case hasKeyPassword != encrypted[0]:
		return tls.Certificate{}, errors.New("the private key is encrypted: set ssl.key.password")
	}
	der := ders[0]
	if hasKeyPassword {
		if der, err = decryptPKCS8(der, keyPassword); err != nil {
			return tls.Certificate{}, fmt.Errorf("Private key could not be loaded: %w", err)
		}
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Private key could not be loaded: %w", err)
	}
	c := tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, cert := range certs {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	if signer, ok := key.(crypto.Signer); !ok || !publicKeyEqual(signer.Public(), certs[0].PublicKey) {
		return tls.Certificate{}, errors.New("the private key does not match the first certificate of the chain")
	}
	return c, nil
}

func publicKeyEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// PKCS#5 v2 (RFC 8018) identifiers: PBES2 with PBKDF2, what openssl pkcs8
// and Java write by default.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask of start-up.
const maxPBKDF2Iterations = 10_000_000

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo of PBES2 (PBKDF2 with
// HMAC-SHA1/256/384/512, AES-CBC or 3DES-CBC) into its PKCS#8 DER.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("not an encrypted PKCS#8 key: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encryption %s is not PBES2", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("PBES2 parameters: %w", err)
	}
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("key derivation %s is not PBKDF2", params.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("PBKDF2 parameters: %w", err)
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("PBKDF2 iteration count %d out of range", kdf.Iterations)
	}
	var prf func() hash.Hash
	switch p := kdf.PRF.Algorithm; {
	case len(p) == 0 || p.Equal(oidHMACSHA1):
		prf = sha1.New
	case p.Equal(oidHMACSHA256):
		prf = sha256.New
	case p.Equal(oidHMACSHA384):
		prf = sha512.New384
	case p.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("PBKDF2 function %s not supported", p)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch s := params.Scheme.Algorithm; {
	case s.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case s.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case s.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case s.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("cipher %s not supported", s)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("cipher IV: %w", err)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, err
	}
	if len(iv) != block.BlockSize() || len(info.Data) == 0 || len(info.Data)%block.BlockSize() != 0 {
		return nil, errors.New("bad IV or encrypted data length")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > block.BlockSize() || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("wrong ssl.key.password (bad padding)")
	}
	return out[:len(out)-pad], nil
}
