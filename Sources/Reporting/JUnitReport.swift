import Foundation
import Profile

/// A run's thresholds and invariants, or a comparison's budgets, as JUnit XML test cases — the Ant/Surefire dialect
/// CI systems read (Jenkins, GitLab, GitHub test reporters): one `<testsuites>` of `<testsuite>`s, each holding one
/// `<testcase>` per check, a failing check carrying a `<failure>` with the measured value and the limit. Pure: the
/// caller passes the time; ``xml()`` renders it, escaped for XML 1.0 (see ``escaped(_:inAttribute:)``).
package struct JUnitReport: Sendable, Equatable {
    /// One check: passed (with what was measured in `output`), failed, or skipped (nothing to judge).
    package struct TestCase: Sendable, Equatable {
        /// What became of the check.
        package enum Outcome: Sendable, Equatable {
            case passed
            /// `message` is the one line a CI system shows; `type` names the kind of check; `details` is the body.
            case failed(message: String, type: String, details: String)
            case skipped(message: String)
        }

        package var name: String
        package var className: String
        package var outcome: Outcome
        /// Shown as the case's `<system-out>`: the measured figure of a passing check.
        package var output: String?

        package init(name: String, className: String, outcome: Outcome, output: String? = nil) {
            self.name = name
            self.className = className
            self.outcome = outcome
            self.output = output
        }
    }

    /// A group of cases (`thresholds`, `invariants`, `budgets`) with when it ran and for how long.
    package struct TestSuite: Sendable, Equatable {
        package var name: String
        package var timestamp: Date
        package var seconds: Double
        package var cases: [TestCase]

        package init(name: String, timestamp: Date, seconds: Double, cases: [TestCase]) {
            self.name = name
            self.timestamp = timestamp
            self.seconds = seconds
            self.cases = cases
        }

        package var failures: Int { cases.count(where: { if case .failed = $0.outcome { true } else { false } }) }
        package var skipped: Int { cases.count(where: { if case .skipped = $0.outcome { true } else { false } }) }
    }

    package var name: String
    package var suites: [TestSuite]

    package init(name: String, suites: [TestSuite]) {
        self.name = name
        self.suites = suites
    }

    /// A run: suite `run`, one case `run` (class `wsload.<profile>.run`) that fails when the run did not complete —
    /// interrupted, no connection ever opened, or one of `problems` (what went wrong after it: the report or an export
    /// not written) — so CI sees red whatever the thresholds say; suite `thresholds`, one case per threshold (class
    /// `wsload.<profile>.thresholds`); and suite `invariants`, one case per invariant checked or violated (class
    /// `wsload.<profile>.invariants`); each timed by the run and stamped with its start.
    package static func run(_ result: RunResult, problems: [String] = []) -> JUnitReport {
        let profile = result.profile.name
        var failures: [String] = []
        if let signal = result.interruptedBy { failures.append("interrupted by \(signal)") }
        if let failure = noConnection(result) { failures.append("no connection: \(failure)") }
        failures += problems
        let run = TestCase(
            name: "run", className: "wsload.\(profile).run",
            outcome: failures.first.map { .failed(message: $0, type: "run", details: failures.joined(separator: "\n")) } ?? .passed,
            output: failures.isEmpty ? "completed after \(seconds(result.elapsed.seconds)) s" : nil)
        let thresholds = result.thresholds.map { outcome in
            let name = outcome.threshold.expression
            let className = "wsload.\(profile).thresholds"
            let measured = "actual \(FigureText.actual(outcome)), limit \(FigureText.limit(of: outcome.threshold))"
            if !outcome.passed {
                var details = "\(name): \(measured)"
                if result.abortedBy == name { details += "\nit stopped the run (abortOnFail)" }
                return TestCase(name: name, className: className, outcome: .failed(message: measured, type: "threshold", details: details))
            }
            // A threshold with nothing to judge passes (as the exit code says) but was not checked: skipped says so.
            if outcome.actual == nil { return TestCase(name: name, className: className, outcome: .skipped(message: measured)) }
            return TestCase(name: name, className: className, outcome: .passed, output: measured)
        }
        let report = result.invariants
        let names = Set(report.checked.filter { $0.value > 0 }.keys).union(report.violations.filter { $0.value > 0 }.keys)
        let invariants = names.sorted().map { name in
            let checks = report.checked[name] ?? 0, violations = report.violations[name] ?? 0
            let counted = "\(counted(violations, "violation")) in \(counted(checks, "check"))"
            let className = "wsload.\(profile).invariants"
            guard violations > 0 else { return TestCase(name: name, className: className, outcome: .passed, output: counted) }
            let examples = (report.examples[name] ?? []).prefix(InvariantReport.maximumExamples).map { example in
                (["actor \(example.actor) (scenario \(example.scenario)): \(example.detail)"] + example.history.map { "  " + $0 })
                    .joined(separator: "\n")
            }
            let details = ([counted] + examples).joined(separator: "\n")
            return TestCase(name: name, className: className, outcome: .failed(message: counted, type: "invariant", details: details))
        }
        let seconds = result.elapsed.seconds
        return JUnitReport(name: "wsload run \(profile)", suites: [
            TestSuite(name: "run", timestamp: result.startedAt, seconds: seconds, cases: [run]),
            TestSuite(name: "thresholds", timestamp: result.startedAt, seconds: seconds, cases: thresholds),
            TestSuite(name: "invariants", timestamp: result.startedAt, seconds: seconds, cases: invariants),
        ])
    }

    /// A run that could not run or finish (no result: `wsload run` exited 1, 70 or 130 before a report): suite `run`
    /// with its one case failing with `reason`, stamped `at`.
    package static func failedRun(profile: String, at timestamp: Date, reason: String) -> JUnitReport {
        let run = TestCase(name: "run", className: "wsload.\(profile).run",
                           outcome: .failed(message: reason, type: "run", details: reason))
        return JUnitReport(name: "wsload run \(profile)", suites: [TestSuite(name: "run", timestamp: timestamp, seconds: 0, cases: [run])])
    }

    /// Why a run counts as having had no connection — every one of its connection attempts failed (`wsload run`
    /// exits 1) — or nil: `none of 3 connection attempts succeeded (connect 3)`.
    package static func noConnection(_ result: RunResult) -> String? {
        let attempts = result.total.counter(.connectAttempts)
        guard attempts > 0, result.total.counter(.connectionsOpened) == 0 else { return nil }
        let codes = result.total.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "none of \(attempts) connection attempts succeeded (\(codes))"
    }

    /// A comparison: suite `budgets`, one case per budget (class `wsload.<profile>.budgets`, the head's profile):
    /// failing when the budget is exceeded (a significant change in the bad direction beyond it), with the change,
    /// its p-value and the limit; skipped when the comparison has no such row (a metric neither side has both of).
    package static func comparison(
        rows: [ComparisonRow], budgets: [RegressionBudget], alpha: Double, profile: String, timestamp: Date, seconds: Double
    ) -> JUnitReport {
        let className = "wsload.\(profile).budgets"
        let cases = budgets.map { budget in
            let name = budget.description
            let limit = (budget.percent >= 0 ? "+" : "-") + formatPercent(abs(budget.percent)) + "%"
            guard let row = rows.first(where: { $0.metric == budget.metric && $0.statistic == budget.statistic }),
                row.presence == .both
            else {
                let why = rows.contains { $0.metric == budget.metric && $0.statistic == budget.statistic }
                    ? "only one side has \(budget.metric) \(budget.statistic)" : "no \(budget.metric) \(budget.statistic) to compare"
                return TestCase(name: name, className: className, outcome: .skipped(message: why))
            }
            let measured = "change \(FigureText.change(row)), \(FigureText.pValue(row.pValue)), limit \(limit)"
            let figures = "base \(FigureText.statistic(row.base, unit: row.unit)), head \(FigureText.statistic(row.head, unit: row.unit)) "
                + "(\(row.test), α = \(alpha))"
            guard budget.isExceeded(by: row, alpha: alpha) else {
                return TestCase(name: name, className: className, outcome: .passed, output: measured + "\n" + figures)
            }
            return TestCase(name: name, className: className,
                            outcome: .failed(message: measured, type: "budget", details: "\(name): \(measured)\n\(figures)"))
        }
        return JUnitReport(name: "wsload compare", suites: [TestSuite(name: "budgets", timestamp: timestamp, seconds: seconds, cases: cases)])
    }

    /// The document: UTF-8, XML 1.0, two-space indentation, one element per line except a case's body text.
    package func xml() -> String {
        let tests = suites.reduce(0) { $0 + $1.cases.count }, failures = suites.reduce(0) { $0 + $1.failures }
        let seconds = suites.map(\.seconds).max() ?? 0
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        text += "<testsuites name=\"\(Self.escaped(name, inAttribute: true))\" tests=\"\(tests)\" failures=\"\(failures)\" "
            + "errors=\"0\" time=\"\(Self.seconds(seconds))\">\n"
        for suite in suites {
            text += "  <testsuite name=\"\(Self.escaped(suite.name, inAttribute: true))\" tests=\"\(suite.cases.count)\" "
                + "failures=\"\(suite.failures)\" errors=\"0\" skipped=\"\(suite.skipped)\" time=\"\(Self.seconds(suite.seconds))\" "
                + "timestamp=\"\(Self.timestamp(suite.timestamp))\""
            guard !suite.cases.isEmpty else {
                text += "/>\n"
                continue
            }
            text += ">\n"
            for testCase in suite.cases {
                text += "    <testcase name=\"\(Self.escaped(testCase.name, inAttribute: true))\" "
                    + "classname=\"\(Self.escaped(testCase.className, inAttribute: true))\""
                var body: [String] = []
                switch testCase.outcome {
                case .passed: break
                case .failed(let message, let type, let details):
                    body.append("<failure message=\"\(Self.escaped(message, inAttribute: true))\" "
                        + "type=\"\(Self.escaped(type, inAttribute: true))\">\(Self.escaped(details, inAttribute: false))</failure>")
                case .skipped(let message):
                    body.append("<skipped message=\"\(Self.escaped(message, inAttribute: true))\"/>")
                }
                if let output = testCase.output {
                    body.append("<system-out>\(Self.escaped(output, inAttribute: false))</system-out>")
                }
                text += body.isEmpty ? "/>\n" : ">\n" + body.map { "      " + $0 + "\n" }.joined() + "    </testcase>\n"
            }
            text += "  </testsuite>\n"
        }
        return text + "</testsuites>\n"
    }

    /// `1 violation`, `1,234 checks`.
    private static func counted(_ count: UInt64, _ noun: String) -> String {
        "\(grouped(saturated(count))) \(noun)\(count == 1 ? "" : "s")"
    }

    /// `text` as XML 1.0 character data, or (`inAttribute`) as a double-quoted attribute value. `&`, `<` and `>` are
    /// always escaped (so `]]>` never appears), `"` and `'` in attributes; CR is written `&#13;` (a parser would
    /// turn a raw one into LF), and in attributes tab and LF as `&#9;` and `&#10;` (a parser would turn them into
    /// spaces). Characters XML 1.0 forbids — C0 controls other than tab, LF and CR, and U+FFFE/U+FFFF — are
    /// replaced with U+FFFD: no character reference can stand for them, and the reader sees that one was there.
    package static func escaped(_ text: String, inAttribute: Bool) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"" where inAttribute: result += "&quot;"
            case "'" where inAttribute: result += "&apos;"
            case "\r": result += "&#13;"
            case "\t" where inAttribute: result += "&#9;"
            case "\n" where inAttribute: result += "&#10;"
            case "\t", "\n": result.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                result.unicodeScalars.append("\u{FFFD}")
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Seconds with millisecond resolution (`12.345`), the form Surefire's schema allows (no exponent, no sign).
    package static func seconds(_ value: Double) -> String {
        let milliseconds = value.isFinite && value > 0 ? UInt64(min(value * 1000, 0x1p62).rounded()) : 0
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// ISO 8601 in UTC to the second, `2026-01-01T12:00:00Z`.
    package static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
