/**
 * What one DMARC or TLS report message may cost (issue 47): the report addresses are public in
 * every customer's DNS, so anyone on the internet can mail them, and each of these is a bound on
 * what such a message can make the server do. The README's "DMARC and TLS reports" states them.
 */

/**
 * The bytes one message's reports may decompress to, all its attachments and zip entries together,
 * counted as they come out (not as a zip declares them). Past it the message is kept as unreadable.
 */
export const REPORT_BYTES_PER_MESSAGE = 50 * 1024 * 1024;

/** Report files one message may carry (attachments and the entries of its zips). */
export const REPORT_FILES_PER_MESSAGE = 100;

/** Records of one aggregate report; policies and failure details of one TLS report. */
export const REPORT_ROWS = 200_000;

/** One record's count of messages, or one TLS count of sessions: more is not a real report. */
export const REPORT_COUNT = 1_000_000_000;

/** The latest moment a report's date range may name (the end of year 9999, in seconds). */
export const REPORT_LATEST_SECONDS = 253_402_300_799;

/**
 * Reports kept per reporter and domain over the last 24 hours of arrivals (a reporter sends one
 * aggregate report a day, or one an hour at most: RFC 7489 §7.2). The reporter is the domain that
 * authenticated the report mail (DMARC pass of its From); the reports of unauthenticated mail,
 * whatever From they claim, share one such budget per domain. A report past it is answered 250 and
 * dropped: not kept, so a flood costs no storage, and not refused, so no sender retries it.
 */
export const REPORTS_PER_REPORTER_PER_DAY = 50;

/** Reading one message in the report thread: CPU time and memory (past either, kept as unreadable). */
export const REPORT_READ_CPU_MS = 60_000;
export const REPORT_READ_MEMORY_MB = 256;
