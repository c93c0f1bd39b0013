// libcurl for Swift. curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic,
// which Swift cannot call: these typed wrappers pass one argument of a known type each.
#include <curl/curl.h>

typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *context);
typedef int (*ccurl_progress_callback)(void *context, curl_off_t downloadTotal, curl_off_t downloadNow,
                                       curl_off_t uploadTotal, curl_off_t uploadNow);

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_progress_callback(CURL *handle, CURLoption option, ccurl_progress_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_offset(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/// What a write callback returns to pause its transfer (a macro Swift does not import as a value
/// of the right type).
static const size_t ccurl_writefunc_pause = CURL_WRITEFUNC_PAUSE;
static const int ccurl_pause_continue = CURLPAUSE_CONT;
static const int ccurl_error_size = CURL_ERROR_SIZE;

typedef CURLcode (*ccurl_ssl_ctx_callback)(CURL *handle, void *sslContext, void *context);

static inline CURLcode ccurl_easy_setopt_ssl_ctx_callback(CURL *handle, CURLoption option, ccurl_ssl_ctx_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/// Sets a blob option (certificate or key bytes) with CURL_BLOB_COPY: libcurl keeps its own copy.
static inline CURLcode ccurl_easy_setopt_blob_copy(CURL *handle, CURLoption option, const void *bytes, size_t length) {
    struct curl_blob blob = { (void *)bytes, length, CURL_BLOB_COPY };
    return curl_easy_setopt(handle, option, &blob);
}

typedef int (*ccurl_seek_callback)(void *context, curl_off_t offset, int origin);

static inline CURLcode ccurl_easy_setopt_seek_callback(CURL *handle, CURLoption option, ccurl_seek_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/// What a read callback returns to abort its transfer.
static const size_t ccurl_readfunc_abort = CURL_READFUNC_ABORT;
static const int ccurl_seekfunc_ok = CURL_SEEKFUNC_OK;
static const int ccurl_seekfunc_cantseek = CURL_SEEKFUNC_CANTSEEK;
