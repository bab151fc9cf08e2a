module github.com/vembed/vembed

go 1.26
