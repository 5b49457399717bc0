module github.com/vastfake/vastfake

go 1.26
