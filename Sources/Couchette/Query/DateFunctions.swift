import Foundation

/// Couchbase Lite's date functions: dates are ISO-8601 strings or milliseconds since 1970.
///
/// Time zones are a number of minutes east of UTC (`MILLIS_TO_TZ(m, -420)`, as in LiteCore) or an
/// IANA name (`'America/Los_Angeles'`). Output omits the milliseconds when they are zero and
/// writes `Z` for UTC. An optional format is given by example, as in N1QL: `'1111-11-11'` (date
/// only), `'11:11:11'` (time only), `'1111-11-11 11:11:11.111'`, … An unparseable date gives null.
enum DateFunctions {
    static func add(_ strict: FunctionLibrary.Strict) {
        strict("MILLIS_TO_STR", 1...2) { values in
            guard let millis = values[0].number else { return .null }
            return format(millis, zone: TimeZone.current, values.count > 1 ? values[1].string : nil)
        }
        strict("MILLIS_TO_UTC", 1...2) { values in
            guard let millis = values[0].number else { return .null }
            return format(millis, zone: nil, values.count > 1 ? values[1].string : nil)
        }
        strict("MILLIS_TO_TZ", 2...3) { values in
            guard let millis = values[0].number, let zone = zone(values[1]) else { return .null }
            return format(millis, zone: zone, values.count > 2 ? values[2].string : nil)
        }
        strict("STR_TO_MILLIS", 1...1) { values in
            guard let millis = millis(values[0]) else { return .null }
            return .int(millis)
        }
        strict("STR_TO_UTC", 1...2) { values in
            guard let millis = millis(values[0]) else { return .null }
            return format(Double(millis), zone: nil, values.count > 1 ? values[1].string : nil)
        }
        strict("STR_TO_TZ", 2...3) { values in
            guard let millis = millis(values[0]), let zone = zone(values[1]) else { return .null }
            return format(Double(millis), zone: zone, values.count > 2 ? values[2].string : nil)
        }
        strict("DATE_DIFF_STR", 3...3) { values in
            guard let a = millis(values[0]), let b = millis(values[1]), let part = part(values[2]) else { return .null }
            return difference(a, b, part)
        }
        strict("DATE_DIFF_MILLIS", 3...3) { values in
            guard let a = moment(values[0]), let b = moment(values[1]), let part = part(values[2]) else { return .null }
            return difference(a, b, part)
        }
        strict("DATE_ADD_STR", 3...4) { values in
            guard let start = millis(values[0]), let amount = values[1].number, let part = part(values[2]),
                  let result = adding(amount, part, to: start) else { return .null }
            return format(Double(result), zone: nil, values.count > 3 ? values[3].string : nil)
        }
        strict("DATE_ADD_MILLIS", 3...3) { values in
            guard let start = moment(values[0]), let amount = values[1].number, let part = part(values[2]),
                  let result = adding(amount, part, to: start) else { return .null }
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
              number <= Double(millisRange.upperBound) else { return nil }
        return Int64(number.rounded(.towardZero))
    }

    enum Part: String {
        case millisecond, second, minute, hour, day, week, month, quarter, year, decade, century, millennium

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

    private static func part(_ value: Datum) -> Part? {
        guard var name = value.string?.lowercased() else { return nil }
        if name.hasSuffix("s") { name.removeLast() }
        return Part(rawValue: name)
    }

    private static func millis(_ value: Datum) -> Int64? {
        guard let text = value.string, let date = ISO8601.date(from: text) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    private static func zone(_ value: Datum) -> TimeZone? {
        // Real offsets lie within ±18 hours (what TimeZone accepts).
        if let minutes = value.number {
            return abs(minutes) <= 18 * 60 ? TimeZone(secondsFromGMT: Int((minutes * 60).rounded())) : nil
        }
        return value.string.flatMap { TimeZone(identifier: $0) }
    }

    private static var utcCalendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }

    private static func difference(_ a: Int64, _ b: Int64, _ part: Part) -> Datum {
        if let length = part.fixedLength { return .int((a - b) / length) }
        let calendar = utcCalendar
        let first = calendar.dateComponents([.year, .month], from: Date(timeIntervalSince1970: Double(a) / 1000))
        let second = calendar.dateComponents([.year, .month], from: Date(timeIntervalSince1970: Double(b) / 1000))
        // Calendar parts count the boundaries crossed, as N1QL does: 2018-10-31 to 2020-06-01 is
        // 2 years (and 20 months).
        func index(_ components: DateComponents) -> Int64 {
            let months = Int64(components.year!) * 12 + Int64(components.month! - 1)
            return part == .month || part == .quarter ? months / part.months : Int64(components.year!) / (part.months / 12)
        }
        return .int(index(first) - index(second))
    }

    /// `start` plus `amount` parts (fractions truncated), or nil when the result leaves
    /// ``millisRange``.
    private static func adding(_ amount: Double, _ part: Part, to start: Int64) -> Int64? {
        // Any amount that moves more than the whole range lands outside it.
        guard amount.isFinite, abs(amount) <= 1e16 else { return nil }
        let whole = Int64(amount.rounded(.towardZero))
        let result: Int64
        if let length = part.fixedLength {
            let (offset, overflow) = whole.multipliedReportingOverflow(by: length)
            let (sum, sumOverflow) = start.addingReportingOverflow(offset)
            guard !overflow, !sumOverflow else { return nil }
            result = sum
        } else {
            let (months, overflow) = whole.multipliedReportingOverflow(by: part.months)
            guard !overflow, abs(months) <= 12 * 10_000, let monthCount = Int(exactly: months),
                  let date = utcCalendar.date(byAdding: .month, value: monthCount,
                                              to: Date(timeIntervalSince1970: Double(start) / 1000)) else { return nil }
            let millis = (date.timeIntervalSince1970 * 1000).rounded()
            guard millis >= Double(millisRange.lowerBound), millis <= Double(millisRange.upperBound) else { return nil }
            result = Int64(millis)
        }
        return millisRange.contains(result) ? result : nil
    }

    /// Formats a moment in `zone` (nil: UTC, written `Z`), by the example `pattern` if given.
    static func format(_ millis: Double, zone: TimeZone?, _ pattern: String?) -> Datum {
        guard millis.isFinite, abs(millis) < 253_402_300_800_000 else { return .null }
        let total = Int64(millis.rounded())
        let date = Date(timeIntervalSince1970: Double(total) / 1000)
        let offsetSeconds = zone?.secondsFromGMT(for: date) ?? 0
        let local = total + Int64(offsetSeconds) * 1000
        var days = local / 86_400_000
        var dayMillis = local % 86_400_000
        if dayMillis < 0 {
            dayMillis += 86_400_000
            days -= 1
        }
        let day = ISO8601.string(from: Date(timeIntervalSince1970: Double(days) * 86_400)).prefix(10)
        let seconds = dayMillis / 1000, fraction = dayMillis % 1000
        func two(_ number: Int64) -> String { number < 10 ? "0\(number)" : "\(number)" }
        var time = two(seconds / 3600) + ":" + two(seconds / 60 % 60)
        let hasDate = pattern.map { $0.contains("-") && $0.count >= 8 } ?? true
        let hasTime = pattern.map { $0.contains(":") } ?? true
        let hasSeconds = pattern.map { $0.filter { $0 == ":" }.count >= 2 } ?? true
        if hasSeconds { time += ":" + two(seconds % 60) }
        let showFraction = pattern.map { $0.contains(".") } ?? (fraction != 0)
        if showFraction && hasSeconds { time += "." + String(String(fraction + 1000).dropFirst()) }
        var zoneText = ""
        let hasZone = pattern.map { p in p.hasSuffix("Z") || p.range(of: #"[+-]\d\d:?\d\d$"#, options: .regularExpression) != nil } ?? true
        if hasZone && hasTime {
            if zone == nil {
                zoneText = "Z"
            } else {
                let minutes = abs(offsetSeconds) / 60
                zoneText = (offsetSeconds < 0 ? "-" : "+") + two(Int64(minutes / 60)) + ":" + two(Int64(minutes % 60))
            }
        }
        let separator = pattern.map { $0.contains(" ") ? " " : "T" } ?? "T"
        switch (hasDate, hasTime) {
        case (true, true): return .string(day + separator + time + zoneText)
        case (true, false): return .string(String(day))
        case (false, true): return .string(time + zoneText)
        case (false, false): return .string(day + separator + time + zoneText)
        }
    }
}
