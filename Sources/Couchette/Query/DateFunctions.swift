import Foundation

/// Couchbase Lite's date functions: dates are ISO-8601 strings or milliseconds since 1970.
///
/// Their rules are N1QL's, as LiteCore implements them:
/// - Output follows the format's components (``DateFormat``); without one, full ISO-8601 with
///   milliseconds when they are not zero and the offset as `Z` or `±hhmm`.
/// - Time zones are minutes east of UTC (`MILLIS_TO_TZ(m, -420)`) or an IANA name.
/// - `DATE_DIFF_*` subtract the dates' components (on the clock each string was written in):
///   a difference in days is the number of midnights crossed, so `DATE_DIFF_STR('2018-09-10
///   23:59:59', '2018-09-11 00:00:01', 'day')` is -1; a difference in years is the difference of
///   the years (2018-01-01 minus 2017-12-31 is 1 year); decades, centuries and millennia divide
///   that.
/// - `DATE_ADD_*` add whole units; calendar units move the date and roll a day past the month's
///   end over (`2018-01-31` plus a month is `2018-03-03`, as N1QL and Couchbase Lite do);
///   `DATE_ADD_STR` writes the result in the offset the input was written in.
/// - An unparseable date, unknown part or result outside the years 0000–9999 gives null.
enum DateFunctions {
    static func add(_ strict: FunctionLibrary.Strict) {
        strict("MILLIS_TO_STR", 1...2) { values in
            guard let millis = moment(values[0]) else { return .null }
            let offset = TimeZone.current.secondsFromGMT(for: Date(timeIntervalSince1970: Double(millis) / 1000)) / 60
            return text(millis, offset, format(values, 1))
        }
        strict("MILLIS_TO_UTC", 1...2) { values in
            guard let millis = moment(values[0]) else { return .null }
            return text(millis, 0, format(values, 1))
        }
        strict("MILLIS_TO_TZ", 2...3) { values in
            guard let millis = moment(values[0]), let offset = offset(values[1], at: millis) else { return .null }
            return text(millis, offset, format(values, 2))
        }
        strict("STR_TO_MILLIS", 1...1) { values in
            guard let date = LocalDate(values[0]) else { return .null }
            return .int(date.utcMillis)
        }
        strict("STR_TO_UTC", 1...2) { values in
            guard let date = LocalDate(values[0]) else { return .null }
            return text(date.utcMillis, 0, format(values, 1))
        }
        strict("STR_TO_TZ", 2...3) { values in
            guard let date = LocalDate(values[0]), let offset = offset(values[1], at: date.utcMillis) else { return .null }
            return text(date.utcMillis, offset, format(values, 2))
        }
        strict("DATE_DIFF_STR", 3...3) { values in
            guard let a = LocalDate(values[0]), let b = LocalDate(values[1]), let part = Part(values[2]) else { return .null }
            return .int(difference(a.localMillis, b.localMillis, part))
        }
        strict("DATE_DIFF_MILLIS", 3...3) { values in
            guard let a = moment(values[0]), let b = moment(values[1]), let part = Part(values[2]) else { return .null }
            return .int(difference(a, b, part))
        }
        strict("DATE_ADD_STR", 3...4) { values in
            guard let date = LocalDate(values[0]), let amount = amount(values[1]), let part = Part(values[2]),
                let result = adding(amount, part, toLocal: date.localMillis)
            else { return .null }
            let offset = date.offsetMinutes ?? 0
            var style = DateFormat.iso
            if date.offsetHasColon { style.zone = .colon }
            return text(result - Int64(offset) * 60_000, offset, values.count > 3 ? format(values, 3) : style)
        }
        strict("DATE_ADD_MILLIS", 3...3) { values in
            guard let start = moment(values[0]), let amount = amount(values[1]), let part = Part(values[2]),
                let result = adding(amount, part, toLocal: start)
            else { return .null }
            return .int(result)
        }
    }

    /// The moments the date functions handle, in milliseconds since 1970: the years 0000–9999
    /// that ISO-8601 strings can write. Outside them a date function gives null (as for an
    /// unparseable date), never a trap converting `1e300` to an integer.
    static let millisRange: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// A number argument as a moment in ``millisRange`` (fractions truncated), or nil.
    private static func moment(_ value: Datum) -> Int64? {
        if case .int(let number) = value { return millisRange.contains(number) ? number : nil }
        guard let number = value.number, number >= Double(millisRange.lowerBound),
            number <= Double(millisRange.upperBound)
        else { return nil }
        return Int64(number.rounded(.towardZero))
    }

    /// A whole number of parts to add (fractions truncated); nil beyond what can move a date
    /// within ``millisRange``.
    private static func amount(_ value: Datum) -> Int64? {
        if case .int(let number) = value { return number.magnitude <= 1_000_000_000_000_000 ? number : nil }
        guard let number = value.number, number.isFinite, abs(number) <= 1e18 else { return nil }
        return Int64(number.rounded(.towardZero))
    }

    private static func format(_ values: [Datum], _ index: Int) -> DateFormat {
        guard values.count > index, let text = values[index].string else { return .iso }
        return DateFormat.parse(text) ?? .iso
    }

    private static func text(_ utcMillis: Int64, _ offsetMinutes: Int, _ format: DateFormat) -> Datum {
        let local = utcMillis + Int64(offsetMinutes) * 60_000
        guard millisRange.contains(utcMillis), millisRange.contains(local) else { return .null }
        return .string(format.string(utcMillis: utcMillis, offsetMinutes: offsetMinutes))
    }

    /// A time zone argument as minutes east of UTC at `millis`: a number of minutes (within the
    /// ±18 hours real offsets lie in) or an IANA name.
    private static func offset(_ value: Datum, at millis: Int64) -> Int? {
        if let minutes = value.number {
            return abs(minutes) <= 18 * 60 ? Int(minutes.rounded(.towardZero)) : nil
        }
        guard let name = value.string, let zone = TimeZone(identifier: name) else { return nil }
        return zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(millis) / 1000)) / 60
    }

    // MARK: - Parts

    enum Part {
        case millisecond, second, minute, hour, day, week, month, quarter, year, decade, century, millennium

        init?(_ value: Datum) {
            guard let name = value.string?.lowercased() else { return nil }
            switch name {
            case "millisecond", "milliseconds": self = .millisecond
            case "second", "seconds": self = .second
            case "minute", "minutes": self = .minute
            case "hour", "hours": self = .hour
            case "day", "days": self = .day
            case "week", "weeks": self = .week
            case "month", "months": self = .month
            case "quarter", "quarters": self = .quarter
            case "year", "years": self = .year
            case "decade", "decades": self = .decade
            case "century", "centuries": self = .century
            case "millennium", "millennia", "millenniums": self = .millennium
            default: return nil
            }
        }

        /// Fixed-length parts, in milliseconds.
        var fixedLength: Int64? {
            switch self {
            case .millisecond: 1
            case .second: 1000
            case .minute: 60_000
            case .hour: 3_600_000
            case .day: 86_400_000
            case .week: 604_800_000
            default: nil
            }
        }

        /// Calendar parts, in months.
        var months: Int64 {
            switch self {
            case .quarter: 3
            case .year: 12
            case .decade: 120
            case .century: 1200
            case .millennium: 12_000
            default: 1
            }
        }
    }

    // MARK: - Arithmetic

    /// The calendar components of a moment on some clock (milliseconds since 1970 on that clock).
    private struct Components {
        var days: Int64, year: Int64, month: Int64, hour: Int64, minute: Int64, second: Int64, millisecond: Int64

        init(_ millis: Int64) {
            let (days, rest) = DateFormat.split(millis)
            self.days = days
            (year, month, _) = ISO8601.civil(fromDays: days)
            hour = rest / 3_600_000
            minute = rest / 60_000 % 60
            second = rest / 1000 % 60
            millisecond = rest % 1000
        }
    }

    /// `a - b` in `part`s, N1QL's way: the later moment's components minus the earlier one's,
    /// combined down to the part, then given the sign of `a - b`.
    static func difference(_ a: Int64, _ b: Int64, _ part: Part) -> Int64 {
        let sign: Int64 = a < b ? -1 : 1
        let later = Components(max(a, b)), earlier = Components(min(a, b))
        let years = later.year - earlier.year
        let days = later.days - earlier.days
        let hours = days * 24 + later.hour - earlier.hour
        let minutes = hours * 60 + later.minute - earlier.minute
        let seconds = minutes * 60 + later.second - earlier.second
        let result: Int64
        switch part {
        case .millisecond: result = seconds * 1000 + later.millisecond - earlier.millisecond
        case .second: result = seconds
        case .minute: result = minutes
        case .hour: result = hours
        case .day: result = days
        case .week: result = days / 7
        case .month: result = years * 12 + later.month - earlier.month
        case .quarter: result = years * 4 + (later.month + 2) / 3 - (earlier.month + 2) / 3
        case .year: result = years
        case .decade: result = years / 10
        case .century: result = years / 100
        case .millennium: result = years / 1000
        }
        return sign * result
    }

    /// `start` (milliseconds since 1970 on some clock) plus `amount` parts, on the same clock;
    /// nil when the result leaves ``millisRange``.
    private static func adding(_ amount: Int64, _ part: Part, toLocal start: Int64) -> Int64? {
        let result: Int64
        if let length = part.fixedLength {
            let (offset, overflow) = amount.multipliedReportingOverflow(by: length)
            let (sum, sumOverflow) = start.addingReportingOverflow(offset)
            guard !overflow, !sumOverflow else { return nil }
            result = sum
        } else {
            let (months, overflow) = amount.multipliedReportingOverflow(by: part.months)
            guard !overflow, abs(months) <= 12 * 20_000 else { return nil }
            let (days, timeOfDay) = DateFormat.split(start)
            let (year, month, day) = ISO8601.civil(fromDays: days)
            let index = year * 12 + (month - 1) + months
            let newYear = index >= 0 ? index / 12 : (index - 11) / 12
            let newMonth = index - newYear * 12 + 1
            guard (0...9999).contains(newYear) else { return nil }
            // A day past the new month's end rolls over into the next month, as in N1QL.
            let firstOfMonth = ISO8601.days(fromCivil: Int(newYear), Int(newMonth), 1)
            result = (firstOfMonth + day - 1) * 86_400_000 + timeOfDay
        }
        return millisRange.contains(result) ? result : nil
    }
}

/// A date string as written: where it lies on its own clock, and the offset it gives.
private struct LocalDate {
    /// Milliseconds since 1970 on the string's own clock (its offset not applied).
    var localMillis: Int64
    /// Minutes east of UTC, nil when the string has no zone (it is then UTC).
    var offsetMinutes: Int?
    /// The offset was written `±hh:mm` rather than `±hhmm`.
    var offsetHasColon = false

    var utcMillis: Int64 { localMillis - Int64(offsetMinutes ?? 0) * 60_000 }

    /// Parses `yyyy-mm-dd`, optionally followed by `T` or a space and `hh:mm[:ss[.fraction]]`,
    /// then `Z` or `±hh[:mm]`/`±hhmm`.
    init?(_ value: Datum) {
        guard let text = value.string else { return nil }
        var bytes = Array(text.utf8)[...]
        func number(_ count: Int) -> Int? {
            guard bytes.count >= count else { return nil }
            var result = 0
            for byte in bytes.prefix(count) {
                guard (48...57).contains(byte) else { return nil }
                result = result * 10 + Int(byte - 48)
            }
            bytes = bytes.dropFirst(count)
            return result
        }
        func take(_ character: Character) -> Bool {
            guard let first = bytes.first, first == character.asciiValue else { return false }
            bytes = bytes.dropFirst()
            return true
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2),
            (1...12).contains(month), (1...ISO8601.daysInMonth(month, year)).contains(day)
        else { return nil }
        var millis = ISO8601.days(fromCivil: year, month, day) * 86_400_000
        if take("T") || take(" ") || take("t") {
            guard let hour = number(2), take(":"), let minute = number(2), hour < 24, minute < 60 else { return nil }
            millis += Int64(hour * 3_600_000 + minute * 60_000)
            if take(":") {
                guard let second = number(2), second < 60 else { return nil }
                millis += Int64(second * 1000)
                if take(".") || take(",") {
                    var scale = 100, any = false
                    while let digit = number(1) {
                        millis += Int64(digit * scale)
                        scale /= 10
                        any = true
                    }
                    guard any else { return nil }
                }
            }
            if take("Z") || take("z") {
                offsetMinutes = 0
            } else if let sign = take("+") ? 1 : take("-") ? -1 : Int?.none {
                guard let hours = number(2), hours <= 18 else { return nil }
                offsetHasColon = take(":")
                let minutes: Int? = bytes.isEmpty && !offsetHasColon ? 0 : number(2)
                guard let minutes, minutes < 60 else { return nil }
                offsetMinutes = sign * (hours * 60 + minutes)
            }
        }
        guard bytes.isEmpty else { return nil }
        localMillis = millis
    }
}
