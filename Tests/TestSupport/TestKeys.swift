// Test-only keys, generated once with `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048`
// and `openssl req -new -x509 -days 36500`. They protect nothing: never use them outside tests.

import FirebaseAdmin

/// An RSA key pair with its self-signed certificate, as Google's x509 endpoint would publish it.
public struct TestKeyPair: Sendable {
    /// The key id (`kid`) tokens signed with this key carry.
    public let kid: String
    /// The private key, PKCS#8 PEM.
    public let privateKeyPEM: String
    /// The self-signed X.509 certificate of the public key, PEM.
    public let certificatePEM: String

    /// The loaded private key.
    public func privateKey() throws -> RSAPrivateKey { try RSAPrivateKey(pem: privateKeyPEM) }

    /// The loaded public key.
    public func publicKey() throws -> RSAPublicKey { try RSAPublicKey(certificatePEM: certificatePEM) }
}

/// The fixed keys of the test suite.
public enum TestKeys {
    /// Google's current signing key in the tests.
    public static let primary = TestKeyPair(
        kid: "test-key-primary",
        privateKeyPEM: """
            -----BEGIN PRIVATE KEY-----
            MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDCpJ8JwH4n1gI7
            P7zMX157fy9fikM209KFlAMcpDSCCWIPzLnohkGa9UdUMR2djUEhIrp81ChgleLQ
            khEYpcAkifP42ixxWkHTxsAsZHihc/vD0dniaipILs+v/Hsz0V89Zf69M+Om5T8j
            rHVu3nbfy/ENHy275AnLbOgBSApgZirBH0hEUptt6n/tVae0MZ9+aRgISsFZbfaQ
            5IeMdxa5zYS/Is8n56l0ehfi9vQQL4wLfpDJjn7hB3Cl0B+325DhmAVOOZQu2/AE
            MKwU4WBOaawY+cEPn1Tw8t1dbF42ojhtGcDf2YFljrtScnVWIArYAXvlT0oNlibB
            mdYBTqXZAgMBAAECggEAHXSXq7xhawpgKpK18dCx5esEoob0LoEmP/g681PnLVGZ
            sS3oaWed2IMrYPKQ2oWkmEze32Kk3J76JNmh9DKrLexhiySLKrk/snqGnQE0XyyD
            6mmguTqbPPK2k9mX1GroKIy9nOjUF+7j2/RujhFk+G+uwi9YdrFnCQ2pW35JMbao
            qfAfCknpHdfExKeu+mZ8g3l+hTITNVCMy+/L61ZqbkdDumQWDOG/PoXyHkQPwqyp
            we4QrubaloIplVOBsO8XLNTB+5st7gR5ET4k1pDiKoCKJZZa5UTXHpu3nX8tQDTJ
            8dm0i3yvTn0ZEVWzaIXJ35XAVbuuSnZahXK/ZfyCHQKBgQDtv7Xg6g6dvtFYA1UR
            DbXaoA7xQdd7YmEf/lzrsqi40rBSCzPwklqQc8zK6MIfsLIN2Xm4jsDuQ8z0w7Gg
            Kn0x+q+Dh75lxWUbXtLw1ukgPnjrYzcey4EyoV92FsMT1odkFRMlXpRwzCYrY3hj
            XjlyE+yC4ceQVyoPPsamfJlDpQKBgQDRlclSo/r4aw20jeyyWEKcIZzERujCr75S
            Gp3CbIBwYR+wU8zJLHfRkQpPyrn4Aduocp5pe5w7PLC/QPHco668COlF8H/aNq5U
            1Ky1Yjr0xvUQ59K9vXYzuPplLFncE3RCPhs78wTI3MSjxaGpyLySDtm6pSxCSCRS
            Np0WRJYzJQKBgQCa9Rf7VzJdmFBj2BAqxE/iBe6XSn3C2pVJQAWaTeDwTcpEPy8E
            Pq+udPtmyRw1gXob0sImC00uPpyob6AnL2pYF/creF8df/HtS/mapchejrlLWmhD
            twonUMyicCWHmYy3K5FGCwYfGsBKCVQfF/vDIb9GcxgaOOWd+CGLw6w1TQKBgD5E
            gUbTP0o1DCJblDo8bLXUaq4J3zeQXTwpejt8XwCEapTJoOsYEhUqQWUJdw0PCELY
            ouX1+qnC00RPOEx0OQLWpu/Hj0S2wD6l3RYatCdrQP4f0gXbV1XwnDwY3C29fen8
            Z7z866v9o1KA8hHueM/wJ5IDZs3efyQJ48vs3q8dAoGAfbkTtv8lptYvblWproOn
            O2fgnjtbF0oI8hnljTJyeAep7HUI84luHkmfTHm2i/8vxGdSGK9d1wk25UQ84XpT
            kKo0DvNP9fH6SIsbmTHQS+AOfTVLylcu0N8DnvaWn9WXzknoYux7a+7TuMCzoL7m
            WM8rFDPnDiC5+GOWAMbbkfM=
            -----END PRIVATE KEY-----
            """,
        certificatePEM: """
            -----BEGIN CERTIFICATE-----
            MIIDHzCCAgegAwIBAgIUchmfQG7R8HBBcfqYxbV6EPvKXn4wDQYJKoZIhvcNAQEL
            BQAwHjEcMBoGA1UEAwwTbG9jaWZ5LXRlc3QtcHJpbWFyeTAgFw0yNjExMjIwMDU1
            MjJaGA8yMTI2MTAyOTAwNTUyMlowHjEcMBoGA1UEAwwTbG9jaWZ5LXRlc3QtcHJp
            bWFyeTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAMKknwnAfifWAjs/
            vMxfXnt/L1+KQzbT0oWUAxykNIIJYg/MueiGQZr1R1QxHZ2NQSEiunzUKGCV4tCS
            ERilwCSJ8/jaLHFaQdPGwCxkeKFz+8PR2eJqKkguz6/8ezPRXz1l/r0z46blPyOs
            dW7edt/L8Q0fLbvkCcts6AFICmBmKsEfSERSm23qf+1Vp7Qxn35pGAhKwVlt9pDk
            h4x3FrnNhL8izyfnqXR6F+L29BAvjAt+kMmOfuEHcKXQH7fbkOGYBU45lC7b8AQw
            rBThYE5prBj5wQ+fVPDy3V1sXjaiOG0ZwN/ZgWWOu1JydVYgCtgBe+VPSg2WJsGZ
            1gFOpdkCAwEAAaNTMFEwHQYDVR0OBBYEFEM8eM8Zqwtx6OtyyYHiyxJhkgzkMB8G
            A1UdIwQYMBaAFEM8eM8Zqwtx6OtyyYHiyxJhkgzkMA8GA1UdEwEB/wQFMAMBAf8w
            DQYJKoZIhvcNAQELBQADggEBAA0FMUE0HMd6jfLL2on1ICEjA+uCAFcfykeYkYgc
            w0E4SXmXE+sDEovjx0q3wMMRDE006b8AJNrQ/MDMOqT+6O5MXADf5BJnOsaiHYp/
            g9FX/81mJQUBAQMyxZHSVGA86ciuxZDkrjStdDjNxZ5hlcj6qLxhwjSdAGSj5ewO
            ghpGA7OPLDJuRtgvk3vsp5kl6cXvqAnRniUnshIO3hE6HivgZ4uJxhfQ4OLLQWVd
            KkvYaT9hur0IP4yJ/Vtg5A11uLtkzeFXwaeVz6jBa6YkmovgUomqlLKE+54K2ibZ
            0LAqx1nDJ+Fj3fPqhjbNf3X9mBDssez8y8NgeHo7+BzDQfo=
            -----END CERTIFICATE-----
            """)

    /// A second Google key, for rotation tests.
    public static let secondary = TestKeyPair(
        kid: "test-key-secondary",
        privateKeyPEM: """
            -----BEGIN PRIVATE KEY-----
            MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDayGf+VN3oMy2g
            7K/+AgQySkkh0eMtlO3QfecxmWvw1rRCXt8yIppLACACiy2S2qRpKRlIjG8r77sY
            oYsADBqSGUHAcf1T+XrkLkWBKbzyuahy5STUPrhrd4V4AZpdUEpBOS0StK6hAZEK
            DxSCQK5NDshTG/so7ULSDFizaTqXFyb8W50G6+3XARfUybDtcRC3HQD+6eFhssMI
            +EFywKO1OuKNGz+SIQxjNSJgZZXE/2Avc/6e531IkdT4ubXT7q/kek/2g5zmQa4F
            T/LAFpQ2QgjfjmlRkvtrnwx2WZmvIERRkNdHyeforYy/nU6flThf56014+CSZaON
            fruT9tDFAgMBAAECggEADAPNpZDlZzXToj7f/bgAdn7lYW3XHHRNaMctSJLyHlW6
            1wVCRnd8198VIvFKlVdxXX6+uculOaQOoeWR47SxIIeyDclEyKqOq5QjSDAHBXZu
            2tvHfWocsyGAdddysdVcX+oYVgAQXLJgaSLBtSiBBKV/Q1nUncoFLXy07KoRUrrp
            ATWHPAKt1mx9wpxB+1T2Ls64f+Tw9DPCm86Ttx0pSI6ze4aoj7GzrSj1t5CQFL2k
            jt2HkB/9PPqaXzZj+qYema80eOOKn7I1AavvWo6i7JSFNgxY9cS8oTdbP2fvKCFV
            YPRbUizf3hXUVk9u6Sydou2J2+bQ/dEL+mlZ68IywQKBgQD1htk57A3WvwWjGBqj
            GvuKzlq5WcfCrwqI66TiWjyqDS9eShEep9UG+pz5o9AZcjMEfsw1AUaiTvG2oDw8
            yY4C+9M3ODX+dxY5xH8WkDLxFE8gQ5y3nMrX9RiRxVuABoVBb19Kh3KPNxMy/4F4
            kVJeEnP4EDYvZ1En+swk/AX3QQKBgQDkHYOiyuCE+BrVqUIhfSfLqvdhM6+2ozHs
            RUyHlZfbck7WbfrP0hOW3CDQIzWcYZC8jj2Mn5AaMYbLmBEhHzw1u995I/g3Ktgo
            w5pbBFdOeTLf5BUv4xi8NFiyxRv1S46s9nLZvZIvYGCLu4N2LX8wkTzPnhBnP+gD
            DCs3sYJchQKBgBy+BH/7WkNhaU+GatfdOMUvEv/PusrXouwUaeD1n1Ro5rqrAQYN
            r6p5fBbdTmcsLzy/ezhZReOKSlGOwH59OdqvkDJOqkN3vWpVzmrdxpjiP8EPKTF1
            cWmGj7HA4M1D9iWK3CTlZkvNrrmxn351xKauklTf0PgLqDx955gMyMYBAoGAPE9t
            USoQSDeMaLbyTAZZ8igGdYWDzGbDOTNtM1+ioZtMKrczG6TwFu+mIUFd2DWXXbLB
            pR8+qx4zBDr1NGucsJw2TkHrSzKhqc1lTvEL4Cx8/eLAk0OYc5HnbYRdivHqC+Kw
            pM7RCoORov/1ltYajY2opT+mGJY10jBycKwWyj0CgYAZGJ9mopDfxwwxH+H+GiQp
            our/FNiCP4ngu1/RkWKAvolJOHHwgFKLf3ET6t4bxRUhLwj6rK8045szzvMVhbJX
            k54W5UYqc00gB+LFrJQpYKjtwpFFohaW1y+ic6/Ik4Ua7hKEfxkMvXTGylmJZWNG
            X/PBOy0JmnhrLg1x0bMKbg==
            -----END PRIVATE KEY-----
            """,
        certificatePEM: """
            -----BEGIN CERTIFICATE-----
            MIIDIzCCAgugAwIBAgIUabKOGOM8cqARNpMFEV4z/5rG8O0wDQYJKoZIhvcNAQEL
            BQAwIDEeMBwGA1UEAwwVbG9jaWZ5LXRlc3Qtc2Vjb25kYXJ5MCAXDTI2MTEyMjAw
            NTUyMloYDzIxMjYxMDI5MDA1NTIyWjAgMR4wHAYDVQQDDBVsb2NpZnktdGVzdC1z
            ZWNvbmRhcnkwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQDayGf+VN3o
            My2g7K/+AgQySkkh0eMtlO3QfecxmWvw1rRCXt8yIppLACACiy2S2qRpKRlIjG8r
            77sYoYsADBqSGUHAcf1T+XrkLkWBKbzyuahy5STUPrhrd4V4AZpdUEpBOS0StK6h
            AZEKDxSCQK5NDshTG/so7ULSDFizaTqXFyb8W50G6+3XARfUybDtcRC3HQD+6eFh
            ssMI+EFywKO1OuKNGz+SIQxjNSJgZZXE/2Avc/6e531IkdT4ubXT7q/kek/2g5zm
            Qa4FT/LAFpQ2QgjfjmlRkvtrnwx2WZmvIERRkNdHyeforYy/nU6flThf56014+CS
            ZaONfruT9tDFAgMBAAGjUzBRMB0GA1UdDgQWBBQ6oGnTbzlJKl0RRAzOfiosa4UC
            HzAfBgNVHSMEGDAWgBQ6oGnTbzlJKl0RRAzOfiosa4UCHzAPBgNVHRMBAf8EBTAD
            AQH/MA0GCSqGSIb3DQEBCwUAA4IBAQATuPRBQZiulovjmA5JYhCV+kjf/L9VVO/h
            XuyF2rucLicIplY/xxnLOe1YpBvorjFKmThVToAkgq1+ElISK7oFhesLRm6oCqfR
            +YDW8UWp61NTrzUxrA7oq7e9numXgy3xEYAHnZJQ/Be9IP9AH3ut4/k38lyyvSks
            PVDEPjx1lkzqTJsbo0s17vEYIBzw7dZYxq58nXBuV7SfmyMBYoysLJOoQ4/z3NJz
            rVyLgqJuDo+CBInqrAV4lOGo7B/uNL6dLrAdur/n3IhDIkkHswz24qJ7F/JcM67J
            TaFA4F5KWXLNNzyBTMSn9z1Ot+o5sXNaj9a6prhToDDLyPRFMbPU
            -----END CERTIFICATE-----
            """)

    /// A key Google never published: signatures with it must fail.
    public static let attacker = TestKeyPair(
        kid: "attacker-key",
        privateKeyPEM: """
            -----BEGIN PRIVATE KEY-----
            MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDHWL+4NK+vwf7p
            HcR4HDUgMq/pCiia3XXgRSIt0NPP/w+6uEUBH7YDszUKqiO0+qB5C9TzOsQES+cb
            gA0O/WJqSTzJUVZGcWZzxAgRy8mNfqvUDNUj9hZt4o5TAld+Cnghi/RHQ8fUI9RF
            A8u+dJPc4DC6CrDjc/1NUjqMsaXLqyt+EfazLT/y2e4p029lHskmoFxKGqjKGhRr
            HXzuxHkYD+lPJgJq56NFDbOnCPUDY7psVoM91GVt/Yq0WPwgJg8U5rclNpzrAD/S
            vvLZ6bN513ZF5PfkPJ0jNMsYpG8QLTQGBi7ISK97OFHwG3zV9B4Tjk15uHmQYoih
            n19aC/sHAgMBAAECggEAIZK/W0k4S4wLH/y88ZOimOUgfkmRNB/XMenCy1+PxMiK
            wCI3sOxDzdS5Oq4T7G+HZkuJVluP1r9n0VhcGqmvEQJ7o9Y4hw2jOR0LVN/y9ose
            akys+uz/swsEeFN9I8OkntXA0t3GAmL0ZZkxj8Z3fqwdWL/jMbN/ti2Cod5rc2T4
            iCWQ/3VbcJRdPKBMDz34DoQlmgPrgeGHc1Zh54K6TgAJhSyhF5KjP3XJnnV5DHjX
            N4ad/BzdxaaflMBqE4ARG/ohVCjvYKfDZxBZEDB0iNxJtmyRlK0druXXhwtVR4dX
            1xmqgDNmBUwVpBGxVszGlZIXw3z25uFiMo/38VUi7QKBgQD9owpLBYWE4+3xZPsk
            36nWKftSNraSI0OyQoYpGXGAVsBj7GPAUWyWjM4QqlfgPvxC1elaIYjlBVbFABo4
            slh/udzuj2Pz/XGIL2Qk5yS5cLTIdU+pjGCoZqS7DgzAc+5yDQtMobuVjHTPQQWV
            8/6W3RgZ7BLp93BAjXQ+KKl2SwKBgQDJNDgJoqFGDDlsdU0r1c+Dcu14bWqp0fEn
            H0hh2zlM9FQox7qcFhPUmbOjTlq+GAIeObyfLyGynG8IVK0BwJPr0+USjgAhUvrn
            HpmZLo/wcBKyY/7fMYnpZQGQA9isvxc9HuDYnv+Inq9nLDUlV+VsQPDvORDViqEa
            GT55GfsItQKBgQDrIzyGon7O3VQZJ4ng/G2CO3dgF5MYVhMLbrrb3VepKEPCH0O2
            5oWp6K2dK56+KQZKm+9y/IXh9BomFls41rZO6ytUCqEacIrRO0Y3JAaa2E7xTDhn
            MdnmJQpw06ykupWDLG6eQ44ZLZaZEWmxQ/txN1WBqqc6OofZgIoUmjPIkwKBgA2V
            ANNlrw1TdezkXjk/TarJ703Z1QFxsp25duFkMxIGzEeUc/xlYSFQ3td/SpDafgoc
            S6dTPysXdEdTr/oWTeX1f9kozMlzGIzRe/zjL8RDTH/OUD4w0eZ3cwuNtuqyW5c8
            pmD5GrbWP3DvgwbqUApmt9zuNTy1BvsECTuTjWahAoGBAO58eeI9Ug/Nm0NOvBB1
            zuB26heET4Lgq0ojWrsQIThLKar2wqC1xEQBm1lP1M1ZBkpGFw7jXu9Sz0epX+EK
            0IS5CoSfmqKltRuBymLJCMp4M9yGAnfKyPWq3Dgd9EC7mzZ5kmDjmiiSxWI5kxml
            pPxdVPpvsjhY9OTWUiPTj8Op
            -----END PRIVATE KEY-----
            """,
        certificatePEM: """
            -----BEGIN CERTIFICATE-----
            MIIDITCCAgmgAwIBAgIUZSl2W+Vfh3IhZbVY0XBt0xo4qcIwDQYJKoZIhvcNAQEL
            BQAwHzEdMBsGA1UEAwwUbG9jaWZ5LXRlc3QtYXR0YWNrZXIwIBcNMjYxMTIyMDA1
            NTIyWhgPMjEyNjEwMjkwMDU1MjJaMB8xHTAbBgNVBAMMFGxvY2lmeS10ZXN0LWF0
            dGFja2VyMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAx1i/uDSvr8H+
            6R3EeBw1IDKv6Qoomt114EUiLdDTz/8PurhFAR+2A7M1CqojtPqgeQvU8zrEBEvn
            G4ANDv1iakk8yVFWRnFmc8QIEcvJjX6r1AzVI/YWbeKOUwJXfgp4IYv0R0PH1CPU
            RQPLvnST3OAwugqw43P9TVI6jLGly6srfhH2sy0/8tnuKdNvZR7JJqBcShqoyhoU
            ax187sR5GA/pTyYCauejRQ2zpwj1A2O6bFaDPdRlbf2KtFj8ICYPFOa3JTac6wA/
            0r7y2emzedd2ReT35DydIzTLGKRvEC00BgYuyEivezhR8Bt81fQeE45Nebh5kGKI
            oZ9fWgv7BwIDAQABo1MwUTAdBgNVHQ4EFgQU0GiAEEowY7dfMJ8uYLU/JlgqH08w
            HwYDVR0jBBgwFoAU0GiAEEowY7dfMJ8uYLU/JlgqH08wDwYDVR0TAQH/BAUwAwEB
            /zANBgkqhkiG9w0BAQsFAAOCAQEAUteIX/Zurgr1CSp5JsWh5lTcemPRR1fx3gGv
            JiNRneWO/xcdnEAG6nmNTZW4ZRJ1uNDXF1umG4Ew44sC0qTSQL3SAS0+qXQdRWwn
            YxHmoOrssMdM3t7NFpsO0nqIIE6rl6JHya/s4SIcEkVq+kc83EJ0TrdU6mzvxPRG
            75pJWLXsbSVWrqUbD6fWKOuq3yZajxO9y9nCkiCraFp8vpgknJp9ul30hGRmDZQD
            HT1Y93YUXB94rBJaL1mywCirMf3YsaFAVJK/u+qgmD8dO+1AzvNVG2VjdD0KQ7QK
            5C4kzAah+3QIwUECInCtWDNYbZqo2mZ2kcXXSwLGymg9nHTN/A==
            -----END CERTIFICATE-----
            """)

    /// The service account's key (PKCS#8); its certificate lets the fake token endpoint verify assertions.
    public static let service = TestKeyPair(
        kid: "service-key-1",
        privateKeyPEM: """
            -----BEGIN PRIVATE KEY-----
            MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCqfN/XQNugaSAu
            xEYHNfJJxJsmNzAG+aiGaJRPGhpezenBZ7aIoiK2xbxLl36ld7mFUwqhORx5Hp/g
            5szjIa0VH/0V4Mztc+KQwRXI4aORA2y4NLhYoyIIwYz+ebqzV7kSkgROLS6Rlz8h
            mjMcTt/99WYafh/Bx97yUhgHJLlpllbAJSUOo+wW9eQnpC6ieyG9iF9RU37YC4mi
            PCpLHt1LQf+rYLQA1NzZLdGXI7dq79TGOVQUDagZtsBkK7iK8NNOP2Blh7KxxBih
            0PnGpMO7yJZCqbqg7xjeEzrUYG/8wmkGMqNEfr4RNZ7tVvcdBzBuIFaSP2usByWh
            F5ikNuD5AgMBAAECggEADHkZ3FL5roT6bol8ERt8iDKa4kMf36bE0l6U2Suw+bYp
            b7WxiFIKZaJWWhZxlNQLTeqLKMv3nhHkQw1HuKdWVSkTuFXL0GSN0ybZO+rsL1gX
            jGuJAC0hOJBGizinNOdKWkY2C+0ozsyIuSHhsuS/ZQJe77nCA4imskZYzS795LBV
            O3UJ9AQzYL8RY0JnZkZmsV1Tw/dL3JV8/4WNphhrYvFsnzIjoJVJrXGU2oUmSDKS
            nzswLP8xP/BqlSvAu2sW3lJV4BORj9eb96pHqlQFJOXakjaS9Dzw6mZVu4xZ3bQi
            TbdhuFnNexNB9cP5QCPnylIivFk/5BnXeodQUoMnjQKBgQDadegetsfbwprQynVw
            uY6kc5kTPXv6zJyOq/4WmYF2+wO3GsXEY+Iq165waKDDq+g62n25n2dRI8CAHTuA
            YRu1rkOaWsLTAf9oEBcRvoqQ/J27t2tFbj/BqwTo8ZzPpL2bMG1Iqqkj1oGkXfZu
            WAwyAdObOcsxCMhrJp97oJbKVQKBgQDHyKRlXTsKO3plZXFW68cM2FDqwWNsuAfB
            ocmRK3bnup+BnvC4IJAsdfUzBOR7kdCM+G/VBDonphDP8xhttMfYjdwFjmVgEl+r
            XLwr1Vf16Ue9gjMd0bDruvpYI4zxxtHocgnitfGkYViOj4pyJufo9flpN26Yxnid
            OgXqmE8oFQKBgQCWDzGPj2v/N1CSpM9AzCUAL2txfOVhpBTSJ7BUI8N7T/cAWoKI
            YTfkx9xJ2IS9g6L0ckq0K5uTb6R2HB5YE9wt0vMa3sc+m/utpofCJ4kVCIDshZRI
            z+85f9jSjcxyES4woHYg2SFvvZO1rNlueEqAOyL4WB2LpAXPHGumRuvtNQKBgEfJ
            e/EEYBucJa3blq9SB3NBI0pHdS9yrS7RsLkeMhqwP3J3Jy4yXTvsos/TWTphudt9
            xcl4PGFU1cOzKTr6c7kHuGCyuxCbaY8MwnzJq1KsoV+iMjXrzDPYOu6Cz7ls5K4u
            lAjHse2MISMQxwGfo0NdZ2J8TZxN7LcqS0fxtLfFAoGANKeK272+mBXY4sn+iThx
            cCNtS1xxdAJobSlRyiafDyJqEp2zm2BsyGClyFx1Zj5Szy0auTcbqbkTQrSO6zm4
            oIh8roxybhsYrFm++hN+A8WTIm+Bz3JuoPP6NxVXJM74DL1LcRaLZnP9aojZ2poG
            +7nvJDkeakN3jFj9BB0qUNg=
            -----END PRIVATE KEY-----
            """,
        certificatePEM: """
            -----BEGIN CERTIFICATE-----
            MIIDHzCCAgegAwIBAgIUDZDO5C6tQUANiUyghppfj6NiTp0wDQYJKoZIhvcNAQEL
            BQAwHjEcMBoGA1UEAwwTbG9jaWZ5LXRlc3Qtc2VydmljZTAgFw0yNjExMjIwMDU1
            MjNaGA8yMTI2MTAyOTAwNTUyM1owHjEcMBoGA1UEAwwTbG9jaWZ5LXRlc3Qtc2Vy
            dmljZTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAKp839dA26BpIC7E
            Rgc18knEmyY3MAb5qIZolE8aGl7N6cFntoiiIrbFvEuXfqV3uYVTCqE5HHken+Dm
            zOMhrRUf/RXgzO1z4pDBFcjho5EDbLg0uFijIgjBjP55urNXuRKSBE4tLpGXPyGa
            MxxO3/31Zhp+H8HH3vJSGAckuWmWVsAlJQ6j7Bb15CekLqJ7Ib2IX1FTftgLiaI8
            Kkse3UtB/6tgtADU3Nkt0Zcjt2rv1MY5VBQNqBm2wGQruIrw004/YGWHsrHEGKHQ
            +cakw7vIlkKpuqDvGN4TOtRgb/zCaQYyo0R+vhE1nu1W9x0HMG4gVpI/a6wHJaEX
            mKQ24PkCAwEAAaNTMFEwHQYDVR0OBBYEFF7Zrh5om3fVhNo2CFAwqEXTdo9hMB8G
            A1UdIwQYMBaAFF7Zrh5om3fVhNo2CFAwqEXTdo9hMA8GA1UdEwEB/wQFMAMBAf8w
            DQYJKoZIhvcNAQELBQADggEBAADTmXEarkYRavbyIl+1H6zAj/5wQbox5MCxhT0u
            P71VM2B7Kl8H1aEZd9owMwPqQQtuc5aT2MXR3VyiLNe90oLCIee7incfNvhgshS2
            tMlLnx0YqZPiqNp4YfI340JoJubVWBrCllbkocFkqIyPJy96RTB2hPyPEEgMv0zC
            IahNBDxZdO4OYRJCfL4YTUN6l6USp+FJjvNLmBYDddHWZuFIe6CfI2MwfMr96JUo
            LVqNWbVaPLz/qOnFBPvhrppN9Kh3ish5gIsk3rJ8AeL1iZv1FDyOdiO69nF9IXHP
            18bdMTMSkBqGyPd1JYUIoks6HsheyKhbE0C7mVgYqsLw5tA=
            -----END CERTIFICATE-----
            """)

    /// The service account's key in PKCS#1 form (`BEGIN RSA PRIVATE KEY`), same key as `service`.
    public static let servicePKCS1PEM = """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEowIBAAKCAQEAqnzf10DboGkgLsRGBzXyScSbJjcwBvmohmiUTxoaXs3pwWe2
        iKIitsW8S5d+pXe5hVMKoTkceR6f4ObM4yGtFR/9FeDM7XPikMEVyOGjkQNsuDS4
        WKMiCMGM/nm6s1e5EpIETi0ukZc/IZozHE7f/fVmGn4fwcfe8lIYByS5aZZWwCUl
        DqPsFvXkJ6QuonshvYhfUVN+2AuJojwqSx7dS0H/q2C0ANTc2S3RlyO3au/UxjlU
        FA2oGbbAZCu4ivDTTj9gZYeyscQYodD5xqTDu8iWQqm6oO8Y3hM61GBv/MJpBjKj
        RH6+ETWe7Vb3HQcwbiBWkj9rrAcloReYpDbg+QIDAQABAoIBAAx5GdxS+a6E+m6J
        fBEbfIgymuJDH9+mxNJelNkrsPm2KW+1sYhSCmWiVloWcZTUC03qiyjL954R5EMN
        R7inVlUpE7hVy9BkjdMm2Tvq7C9YF4xriQAtITiQRos4pzTnSlpGNgvtKM7MiLkh
        4bLkv2UCXu+5wgOIprJGWM0u/eSwVTt1CfQEM2C/EWNCZ2ZGZrFdU8P3S9yVfP+F
        jaYYa2LxbJ8yI6CVSa1xlNqFJkgykp87MCz/MT/wapUrwLtrFt5SVeATkY/Xm/eq
        R6pUBSTl2pI2kvQ88OpmVbuMWd20Ik23YbhZzXsTQfXD+UAj58pSIrxZP+QZ13qH
        UFKDJ40CgYEA2nXoHrbH28Ka0Mp1cLmOpHOZEz17+sycjqv+FpmBdvsDtxrFxGPi
        KteucGigw6voOtp9uZ9nUSPAgB07gGEbta5DmlrC0wH/aBAXEb6KkPydu7drRW4/
        wasE6PGcz6S9mzBtSKqpI9aBpF32blgMMgHTmznLMQjIayafe6CWylUCgYEAx8ik
        ZV07Cjt6ZWVxVuvHDNhQ6sFjbLgHwaHJkSt257qfgZ7wuCCQLHX1MwTke5HQjPhv
        1QQ6J6YQz/MYbbTH2I3cBY5lYBJfq1y8K9VX9elHvYIzHdGw67r6WCOM8cbR6HIJ
        4rXxpGFYjo+Kcibn6PX5aTdumMZ4nToF6phPKBUCgYEAlg8xj49r/zdQkqTPQMwl
        AC9rcXzlYaQU0iewVCPDe0/3AFqCiGE35MfcSdiEvYOi9HJKtCubk2+kdhweWBPc
        LdLzGt7HPpv7raaHwieJFQiA7IWUSM/vOX/Y0o3MchEuMKB2INkhb72TtazZbnhK
        gDsi+Fgdi6QFzxxrpkbr7TUCgYBHyXvxBGAbnCWt25avUgdzQSNKR3Uvcq0u0bC5
        HjIasD9ydycuMl077KLP01k6YbnbfcXJeDxhVNXDsyk6+nO5B7hgsrsQm2mPDMJ8
        yatSrKFfojI168wz2Drugs+5bOSuLpQIx7HtjCEjEMcBn6NDXWdifE2cTey3KktH
        8bS3xQKBgDSnitu9vpgV2OLJ/ok4cXAjbUtccXQCaG0pUcomnw8iahKds5tgbMhg
        pchcdWY+Us8tGrk3G6m5E0K0jus5uKCIfK6Mcm4bGKxZvvoTfgPFkyJvgc9ybqDz
        +jcVVyTO+Ay9S3EWi2Zz/WqI2dqaBvu57yQ5HmpDd4xY/QQdKlDY
        -----END RSA PRIVATE KEY-----
        """

    /// A certificate with an EC P-256 key (Google never publishes these; loading must fail).
    public static let ecCertificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIIBiTCCAS+gAwIBAgIUTJB8zpU5yH2WDFn0wtI5OcrHD28wCgYIKoZIzj0EAwIw
        GTEXMBUGA1UEAwwObG9jaWZ5LXRlc3QtZWMwIBcNMjYxMTIyMDA1NTQxWhgPMjEy
        NjEwMjkwMDU1NDFaMBkxFzAVBgNVBAMMDmxvY2lmeS10ZXN0LWVjMFkwEwYHKoZI
        zj0CAQYIKoZIzj0DAQcDQgAE/CBq+h4ouARfUEgXrycGPOGwBzySsXkhR379LwXV
        mEuJyhv2fS1NqhrbL/UW2lPxRctfamIn071ThEBuFfQ7oqNTMFEwHQYDVR0OBBYE
        FFZczvhdt1JXAIiXS8+K3ppDhzR2MB8GA1UdIwQYMBaAFFZczvhdt1JXAIiXS8+K
        3ppDhzR2MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAOSswhPE
        vWDuRwB131mb039ZWt8uRHcX8BZcC68FxeaAAiA9fkV7IL0XeP2W5+MokKSK+Pwm
        oBKD5sPan1++NKJayg==
        -----END CERTIFICATE-----
        """
}
