import Foundation
import Testing

@testable import Couchette

/// The date functions with N1QL's rules as Couchbase Lite applies them: output shaped by the
/// format's components, offsets kept in the form they are written, differences counted the way
/// N1QL counts them, additions that keep the input's offset and roll month ends over.
@Suite(.tags(.sanitizeAddress)) struct SQLPPDateFunctionTests {
    private func check(_ cases: [(String, String?)], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", #"{"date":"2018-10-23T11:33:01-0700","millis":1540319581000}"#)
            try await SQLPP.expect(db, cases, sourceLocation: sourceLocation)
        }
    }

    @Test func outputFollowsTheFormat() async throws {
        try await check([
            ("STR_TO_UTC('2018-10-23T18:33', '1111-11-11T11:11')", #""2018-10-23T18:33:00Z""#),
            ("STR_TO_UTC('2018-10-23T11:33:01-07:00', '1111-11-11T11:11:11Z')", #""2018-10-23T18:33:01Z""#),
            ("STR_TO_UTC('2018-10-23T11:33:01.5-07:00', '1111-11-11 11:11:11.111')", #""2018-10-23 18:33:01.500""#),
            ("STR_TO_UTC('2018-10-23T11:33:01-07:00', '1111-11-11 11:11:11.111')", #""2018-10-23 18:33:01""#),
            ("STR_TO_UTC(date, '1111-11-11')", #""2018-10-23""#), ("STR_TO_UTC(date, '11:11:11')", #""18:33:01""#),
            ("STR_TO_UTC(date, '11:11:11+00:00')", #""18:33:01Z""#), ("STR_TO_UTC(date, '%Y-%m-%d')", #""2018-10-23""#),
            ("STR_TO_UTC(date, '%FT%T%z')", #""2018-10-23T18:33:01Z""#), ("STR_TO_UTC(date, 'nonsense')", #""2018-10-23T18:33:01Z""#),
            ("STR_TO_UTC('2018-10-23T18:33:01.123Z')", #""2018-10-23T18:33:01.123Z""#),
            ("MILLIS_TO_UTC(millis)", #""2018-10-23T18:33:01Z""#), ("MILLIS_TO_UTC(1540319581999)", #""2018-10-23T18:33:01.999Z""#),
            ("MILLIS_TO_UTC(0, '1111-11-11')", #""1970-01-01""#), ("MILLIS_TO_UTC(-1)", #""1969-12-31T23:59:59.999Z""#),
            ("STR_TO_MILLIS(date)", "1540319581000"), ("STR_TO_MILLIS('2018-10-23')", "1540252800000"),
            ("STR_TO_MILLIS('2018-02-30')", "null"), ("STR_TO_MILLIS('x')", "null"), ("STR_TO_MILLIS(nope)", nil),
        ])
    }

    @Test func offsetsAreKeptInTheFormTheFormatWrites() async throws {
        try await check([
            ("MILLIS_TO_TZ(millis, -420)", #""2018-10-23T11:33:01-0700""#),
            ("MILLIS_TO_TZ(millis, 690)", #""2018-10-24T06:03:01+1130""#),
            ("MILLIS_TO_TZ(millis, 690, '1111-11-11T11:11:11+11:30')", #""2018-10-24T06:03:01+11:30""#),
            ("MILLIS_TO_TZ(millis, -420, '1111-11-11T11:11:11-0700')", #""2018-10-23T11:33:01-0700""#),
            ("MILLIS_TO_TZ(millis, 0, '1111-11-11T11:11:11+11:30')", #""2018-10-23T18:33:01Z""#),
            ("MILLIS_TO_TZ(millis, 'Asia/Tokyo')", #""2018-10-24T03:33:01+0900""#),
            ("STR_TO_TZ(date, 330, '%Y-%m-%dT%H:%M:%S%Ez')", #""2018-10-24T00:03:01+05:30""#),
            ("STR_TO_TZ(date, 'America/New_York')", #""2018-10-23T14:33:01-0400""#),
            ("MILLIS_TO_TZ(millis, 'Nowhere/City')", "null"), ("MILLIS_TO_TZ(millis, 5000)", "null"),
        ])
    }

    @Test func differencesCountWholeUnitsTheN1QLWay() async throws {
        try await check([
            ("DATE_DIFF_STR('2018-09-10 23:59:59', '2018-09-11 00:00:01', 'day')", "-1"),
            ("DATE_DIFF_STR('2018-09-11 00:00:01', '2018-09-10 23:59:59', 'day')", "1"),
            ("DATE_DIFF_STR('2018-01-31T00:01:01.5Z', '2018-01-31T00:01:00.9Z', 'second')", "1"),
            ("DATE_DIFF_STR('2018-01-31T00:02:01Z', '2018-01-31T00:01:59Z', 'minute')", "1"),
            ("DATE_DIFF_STR('2018-02-01T00:01:59Z', '2018-01-31T23:59:01Z', 'month')", "1"),
            ("DATE_DIFF_STR('2018-01-01T00:01:59Z', '2017-12-31T23:59:01Z', 'year')", "1"),
            ("DATE_DIFF_STR('2018-01-31T02:00:00-07:00', '2018-01-31T00:00:00-08:00', 'hour')", "2"),
            ("DATE_DIFF_STR('2006-01-02', '1998-02-02', 'year')", "8"), ("DATE_DIFF_STR('2013-10-01', '2015-01-01', 'quarter')", "-5"),
            ("DATE_DIFF_STR('2014-12-01', '2015-05-30', 'quarter')", "-2"), ("DATE_DIFF_STR('2015-11-01', '2014-10-01', 'month')", "13"),
            ("DATE_DIFF_STR('2017-02-01T01:00:01.5Z', '2017-01-01T00:00:00Z', 'week')", "4"),
            ("DATE_DIFF_STR('2017-01-01T01:00:01.5Z', '2016-01-01T00:00:00Z', 'day')", "366"),
            ("DATE_DIFF_STR('2018-01-31T00:00:00Z', '2018-01-31T00:00:01.5Z', 'millisecond')", "-1500"),
            ("DATE_DIFF_STR('2118-04-08T01:00:01.5Z', '2017-01-01T00:00:00Z', 'century')", "1"),
            ("DATE_DIFF_STR('2001-01-01', '1999-12-31', 'century')", "0"),
            ("DATE_DIFF_STR('2028-04-01', '2017-01-01', 'decades')", "1"), ("DATE_DIFF_STR('x', date, 'day')", "null"),
            ("DATE_DIFF_STR(date, date, 'fortnight')", "null"),
            ("DATE_DIFF_MILLIS(1536623999000, 1536624001000, 'day')", "-1"),
            ("DATE_DIFF_MILLIS(1517356861500, 1517356860900, 'second')", "1"),
            ("DATE_DIFF_MILLIS(1136160000000, 886377600000, 'year')", "8"),
            ("DATE_DIFF_MILLIS(1517356801500, 1517356800000, 'millisecond')", "1500"),
        ])
    }

    @Test func additionsKeepTheOffsetAndRollMonthEndsOver() async throws {
        try await check([
            ("DATE_ADD_STR('2016-01-01T00:00:00-07:00', 1, 'day')", #""2016-01-02T00:00:00-07:00""#),
            ("DATE_ADD_STR(date, 2, 'hours')", #""2018-10-23T13:33:01-0700""#),
            ("DATE_ADD_STR('2018-01-31T00:00:00Z', 1, 'month')", #""2018-03-03T00:00:00Z""#),
            ("DATE_ADD_STR('2018-02-15T00:00:00Z', 1, 'month')", #""2018-03-15T00:00:00Z""#),
            ("DATE_ADD_STR('2016-02-28T00:00:00Z', 1, 'day')", #""2016-02-29T00:00:00Z""#),
            ("DATE_ADD_STR('2018-01-01T00:00:00Z', 1500, 'millisecond')", #""2018-01-01T00:00:01.500Z""#),
            ("DATE_ADD_STR('2018-01-01T00:00:00Z', 25, 'hour')", #""2018-01-02T01:00:00Z""#),
            ("DATE_ADD_STR('2018-02-27T00:00:00Z', 1, 'week')", #""2018-03-06T00:00:00Z""#),
            ("DATE_ADD_STR('2019-01-01T00:00:00Z', -12, 'month')", #""2018-01-01T00:00:00Z""#),
            ("DATE_ADD_STR('2018-01-01', 1, 'century')", #""2118-01-01T00:00:00Z""#),
            ("DATE_ADD_STR('2018-01-01', 1, 'century', '1111-11-11')", #""2118-01-01""#),
            ("DATE_ADD_STR('2970-01-01T00:00:00Z', -1, 'millennium')", #""1970-01-01T00:00:00Z""#),
            ("DATE_ADD_STR('9999-12-31T00:00:00Z', 1, 'year')", "null"), ("DATE_ADD_STR(date, 1, 'fortnight')", "null"),
            ("DATE_ADD_MILLIS(1514764800000, 1, 'month')", "1517443200000"),
            ("DATE_ADD_MILLIS(1514764800000, 1, 'century')", "4670438400000"),
            ("DATE_ADD_MILLIS(0, 1, 'millennium')", "31556995200000"), ("DATE_ADD_MILLIS(1e300, 1, 'day')", "null"),
            ("DATE_ADD_MILLIS(0, 1e300, 'day')", "null"),
        ])
    }

    @Test func oddFormatsAndAmountsGiveDefaultsOrNull() async throws {
        try await check([
            ("MILLIS_TO_UTC(0, '')", #""1970-01-01T00:00:00Z""#), ("MILLIS_TO_UTC(0, 'Z')", #""1970-01-01T00:00:00Z""#),
            ("MILLIS_TO_UTC(0, '%')", #""1970-01-01T00:00:00Z""#), ("MILLIS_TO_UTC(0, '+00:00')", #""1970-01-01T00:00:00Z""#),
            ("MILLIS_TO_UTC(0, '.111')", #""1970-01-01T00:00:00Z""#), ("MILLIS_TO_UTC(0, 5)", #""1970-01-01T00:00:00Z""#),
            ("MILLIS_TO_UTC(0, '%T')", #""00:00:00""#), ("MILLIS_TO_UTC(1, '%F %T%s')", #""1970-01-01 00:00:00.001""#),
            ("DATE_ADD_STR('2018-01-01', 9223372036854775807, 'month')", "null"),
            ("DATE_ADD_STR('2018-01-01', -9223372036854775808, 'millisecond')", "null"),
            ("DATE_ADD_MILLIS(253402300799999, 1, 'millisecond')", "null"),
            ("DATE_DIFF_MILLIS(-62167219200000, 253402300799999, 'millisecond')", "-315569519999999"),
            ("STR_TO_MILLIS('2018-10-23T18:33:01+1900')", "null"), ("STR_TO_MILLIS('2018-10-23T18:33:01+07')", "1540294381000"),
            ("STR_TO_MILLIS('2018-10-23T24:00')", "null"), ("STR_TO_MILLIS('2018-10-23T')", "null"),
        ])
    }

    /// Random near-dates and near-formats through every string-taking date function: each gives
    /// a string, a number or null, never a trap.
    @Test func randomDateAndFormatTextNeverTraps() async throws {
        try await withDatabase { db, _ in
            var random = ValueEncodingTests.SeededGenerator(seed: 18)
            let alphabet = Array("0123456789-:T Z+.%YmdHMSsFEz/1111")
            let samples = ["2018-10-23T18:33:01.5+07:00", "1111-11-11T11:11:11.111Z", "%Y-%m-%dT%H:%M:%S%Ez"]
            var texts: [String] = []
            for index in 0..<400 {
                var characters = Array(samples[index % samples.count])
                for _ in 0..<Int.random(in: 0...4, using: &random) where !characters.isEmpty {
                    let position = Int.random(in: 0..<characters.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: characters.remove(at: position)
                    case 1: characters[position] = alphabet.randomElement(using: &random)!
                    default: characters.insert(alphabet.randomElement(using: &random)!, at: position)
                    }
                }
                texts.append(String(characters))
            }
            let document = MutableDocument(id: "d")
            document.setValue(texts, forKey: "texts")
            try await db.defaultCollection().save(document: document)
            let rows = try await db.createQuery(
                """
                SELECT STR_TO_UTC(t, t) AS a, STR_TO_TZ(t, 330, t) AS b, DATE_ADD_STR(t, 13, 'month', t) AS c,
                       DATE_DIFF_STR(t, '2018-01-01', 'week') AS d, MILLIS_TO_UTC(STR_TO_MILLIS(t), t) AS e
                FROM _ AS doc UNNEST doc.texts AS t
                """
            ).execute().allResults()
            #expect(rows.count == texts.count)
            for row in rows {
                for column in ["a", "b", "c", "d", "e"] {
                    let value = row.value(forKey: column)
                    #expect(value == nil || value is String || value is Int || value is NSNull, "\(column): \(String(describing: value))")
                }
            }
        }
    }
}
