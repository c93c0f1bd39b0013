import Foundation

/// ISO-8601 dates as Couchbase Lite stores them: `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'` in UTC.
///
/// Written by hand (proleptic Gregorian arithmetic) because it sits on hot paths and must be
/// thread-safe without locks.
enum ISO8601 {
    /// Formats `date` with milliseconds, in UTC, rounded to the nearest millisecond: `Date` holds
    /// binary seconds, so x.340 may be stored as x.33999…; rounding down would print .339 and a
    /// date read back from text and stored again would drift. `date` must pass ``canFormat(_:)``.
    static func string(from date: Date) -> String {
        let (days, milliseconds) = split(date)
        let (year, month, day) = civil(fromDays: days)
        if (0...9999).contains(year) {
            // The usual case, written digit by digit into the string's own storage (dates are
            // formatted for every save of a model or document holding one).
            return String(unsafeUninitializedCapacity: formattedCount) { output in
                put(year: year, month: month, day: day, milliseconds: milliseconds, into: output)
            }
        }
        let seconds = milliseconds / 1000
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
            + pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
            + "." + pad(milliseconds % 1000, 3) + "Z"
    }

    /// The bytes of a date with a four-digit year.
    static let formattedCount = 24

    /// Writes the UTF-8 bytes of ``string(from:)`` into `output` (``formattedCount`` bytes) without
    /// making a string; false, with nothing written, for a year outside 0000–9999.
    static func write(_ date: Date, into output: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        let (days, milliseconds) = split(date)
        let (year, month, day) = civil(fromDays: days)
        guard (0...9999).contains(year), output.count >= formattedCount else { return false }
        _ = put(year: year, month: month, day: day, milliseconds: milliseconds, into: output)
        return true
    }

    /// Days since 1970 and milliseconds into the day, rounded to the nearest millisecond: `Date`
    /// holds binary seconds, so x.340 may be stored as x.33999…; rounding down would print .339 and
    /// a date read back from text and stored again would drift.
    private static func split(_ date: Date) -> (days: Int64, milliseconds: Int64) {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var days = totalMilliseconds / 86_400_000
        var milliseconds = totalMilliseconds % 86_400_000
        if milliseconds < 0 {
            milliseconds += 86_400_000
            days -= 1
        }
        return (days, milliseconds)
    }

    /// `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'` digit by digit; returns the count written.
    private static func put(
        year: Int64, month: Int64, day: Int64, milliseconds: Int64, into output: UnsafeMutableBufferPointer<UInt8>
    ) -> Int {
        let seconds = milliseconds / 1000
        var position = 0
        func put(_ value: Int64, _ width: Int, _ separator: Unicode.Scalar) {
            var remaining = value
            for digit in stride(from: width - 1, through: 0, by: -1) {
                output[position + digit] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            output[position + width] = UInt8(ascii: separator)
            position += width + 1
        }
        put(year, 4, "-")
        put(month, 2, "-")
        put(day, 2, "T")
        put(seconds / 3600, 2, ":")
        put(seconds / 60 % 60, 2, ":")
        put(seconds % 60, 2, ".")
        put(milliseconds % 1000, 3, "Z")
        return position
    }

    /// Whether `date` formats with a four-digit year (0000–9999), so that it can be stored and
    /// parsed back. False for NaN and for dates so remote that formatting them would overflow.
    static func canFormat(_ date: Date) -> Bool {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        return milliseconds >= -62_167_219_200_000 && milliseconds < 253_402_300_800_000
    }

    /// Parses `yyyy-MM-dd`, optionally followed by `THH:mm[:ss[.fraction]]` and `Z` or `±HH[:]mm`.
    /// A missing zone means UTC.
    static func date(from text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.take("-"), let month = scanner.digits(2), scanner.take("-"),
            let day = scanner.digits(2), (1...12).contains(month), (1...daysInMonth(month, year)).contains(day)
        else { return nil }
        var seconds: Double = 0
        if scanner.take("T") || scanner.take(" ") || scanner.take("t") {
            guard let hour = scanner.digits(2), scanner.take(":"), let minute = scanner.digits(2),
                hour < 24, minute < 60
            else { return nil }
            seconds = Double(hour * 3600 + minute * 60)
            if scanner.take(":") {
                guard let second = scanner.digits(2), second < 61 else { return nil }
                seconds += Double(second)
                if scanner.take(".") || scanner.take(",") {
                    var scale = 0.1
                    var any = false
                    while let digit = scanner.digit() {
                        seconds += Double(digit) * scale
                        scale /= 10
                        any = true
                    }
                    guard any else { return nil }
                }
            }
            if scanner.take("Z") || scanner.take("z") {
                // UTC
            } else if let sign = scanner.sign() {
                guard let hours = scanner.digits(2) else { return nil }
                _ = scanner.take(":")
                guard let minutes = scanner.digits(2) else { return nil }
                seconds -= Double(sign * (hours * 3600 + minutes * 60))
            }
        }
        guard scanner.atEnd else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        return Date(timeIntervalSince1970: Double(days) * 86_400 + seconds)
    }

    static func daysInMonth(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // MARK: - Calendar arithmetic (Howard Hinnant's civil-date algorithms)

    /// Year, month (1–12) and day of the day `days` after 1970-01-01.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to a year, month (1–12) and day.
    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func pad(_ number: Int64, _ width: Int) -> String {
        let text = String(number)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    private struct Scanner {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
            position += 1
            return true
        }

        mutating func digit() -> Int? {
            guard position < bytes.count, (48...57).contains(bytes[position]) else { return nil }
            position += 1
            return Int(bytes[position - 1] - 48)
        }

        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        mutating func sign() -> Int? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }
    }
}
